#!/usr/bin/env node
// HF's Rust tokenizer (npm `tokenizers`) set up the way the Python BertWordPieceTokenizer does:
// WordPiece model + BertNormalizer(clean_text, handle_chinese_chars, strip_accents = lowercase,
// lowercase) + BertPreTokenizer, the five specials registered as special tokens, no [CLS]/[SEP]
// added. Prints one line of ids (or tokens) per input line, like `bert-train tokenize`.
//
//   node hf_tokenize.js --vocab V [--cased] [--tokens] [--input FILE] [--bench RUNS [--bench-mode batch|single]]
// With --bench, prints "<tokens> <seconds>" per run instead of the tokens: `batch` = encodeBatch
// over blocks of 256 lines (Rust threads: RAYON_NUM_THREADS), `single` = one encode() per line.
const fs = require('fs');
const path = require('path');
const modDir = process.env.HF_TOKENIZERS_DIR ||
  path.join(__dirname, '..', '..', '.cache', 'npm', 'node_modules', 'tokenizers');
const tk = require(modDir);

const args = process.argv.slice(2);
const opt = (name, def) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : def; };
const has = (name) => args.includes(name);
const vocabFile = opt('--vocab');
const lowercase = !has('--cased');
const input = opt('--input', '/dev/stdin');
const benchRuns = parseInt(opt('--bench', '0'), 10);
const benchMode = opt('--bench-mode', 'batch');

async function main() {
  const vocab = {};
  const lines = fs.readFileSync(vocabFile, 'utf8').split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  lines.forEach((t, i) => { vocab[t.trimEnd()] = i; });
  const tok = new tk.Tokenizer(tk.WordPiece.init(vocab, { unkToken: '[UNK]', continuingSubwordPrefix: '##', maxInputCharsPerWord: 100 }));
  tok.setNormalizer(tk.bertNormalizer({ cleanText: true, handleChineseChars: true, stripAccents: lowercase, lowercase }));
  tok.setPreTokenizer(tk.bertPreTokenizer());
  tok.addSpecialTokens(['[UNK]', '[SEP]', '[CLS]', '[PAD]', '[MASK]'].filter((t) => t in vocab));

  // split on the \n byte first so invalid UTF-8 never merges lines; each line decodes with U+FFFD
  const buf = fs.readFileSync(input);
  const text = [];
  let start = 0;
  for (let i = 0; i <= buf.length; i++) {
    if (i === buf.length || buf[i] === 10) {
      if (i > start || i < buf.length) text.push(buf.toString('utf8', start, i));
      start = i + 1;
    }
  }
  const opts = { addSpecialTokens: false };
  const batch = benchRuns > 0 ? 256 : 4096;  // 256 measured fastest for the benchmark
  const encodeAll = async () => {
    const out = [];
    if (benchMode === 'single') {
      for (const line of text) out.push(await tok.encode(line, null, opts));
      return out;
    }
    for (let i = 0; i < text.length; i += batch) out.push(...await tok.encodeBatch(text.slice(i, i + batch), opts));
    return out;
  };
  if (benchRuns > 0) {
    for (let r = 0; r < benchRuns; r++) {
      const t0 = process.hrtime.bigint();
      const enc = await encodeAll();
      const s = Number(process.hrtime.bigint() - t0) / 1e9;
      let n = 0;
      for (const e of enc) n += e.getLength();
      process.stdout.write(`${n} ${s}\n`);
    }
    return;
  }
  const enc = await encodeAll();
  const parts = [];
  for (const e of enc) parts.push((has('--tokens') ? e.getTokens() : e.getIds()).join(' '));
  process.stdout.write(parts.join('\n') + (parts.length ? '\n' : ''));
}
main().catch((e) => { console.error(e); process.exit(1); });
