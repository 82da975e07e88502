#!/usr/bin/env node
// Writes the texts the tokenizer parity check runs on, one file per source, one text per line:
//   node extract_texts.js DATA_DIR OUT_DIR [--sweep]
// corpus/* as-is; SQuAD contexts, questions and answers; every line of the GLUE .tsv/.txt files
// (tabs are whitespace to BERT); with --sweep also every Unicode scalar value >= U+0080 in a few
// contexts, which checks the character tables themselves.
const fs = require('fs');
const path = require('path');
const [dataDir, outDir] = process.argv.slice(2);
fs.mkdirSync(outDir, { recursive: true });
const list = (d) => (fs.existsSync(d) ? fs.readdirSync(d).sort() : []);

for (const f of list(path.join(dataDir, 'corpus')))
  fs.writeFileSync(path.join(outDir, `corpus-${f}`), fs.readFileSync(path.join(dataDir, 'corpus', f)));

const squad = path.join(dataDir, 'squad');
for (const f of list(squad).filter((f) => f.endsWith('.json'))) {
  const j = JSON.parse(fs.readFileSync(path.join(squad, f), 'utf8'));
  const out = [];
  for (const art of j.data) {
    out.push(art.title);
    for (const p of art.paragraphs) {
      out.push(...p.context.split('\n'));
      for (const qa of p.qas) {
        out.push(qa.question);
        for (const a of qa.answers || []) out.push(a.text);
      }
    }
  }
  fs.writeFileSync(path.join(outDir, `squad-${f.replace(/\.json$/, '')}.txt`), out.join('\n') + '\n');
}

const glue = path.join(dataDir, 'glue');
for (const task of list(glue))
  for (const f of list(path.join(glue, task)).filter((f) => /\.(tsv|txt)$/.test(f) && !/LICENSE/.test(f)))
    fs.writeFileSync(path.join(outDir, `glue-${task}-${f}`), fs.readFileSync(path.join(glue, task, f)));

if (process.argv.includes('--sweep')) {
  const out = [];
  for (let cp = 0x80; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const c = String.fromCodePoint(cp);
    out.push(`a${c}b ${c} X${c}${c}`);
  }
  fs.writeFileSync(path.join(outDir, 'sweep-unicode.txt'), out.join('\n') + '\n');
}
