#!/usr/bin/env node
// Compares two id files line by line (ours vs HF's) and prints the mismatching lines with the
// text and both token sequences:  node compare_ids.js TEXT OURS THEIRS VOCAB [MAX_SHOWN]
// Exit status 0 when identical, 1 otherwise. Last stdout line: "<mismatches> <lines>".
const fs = require('fs');
const [textF, oursF, theirsF, vocabF, maxShown = '5'] = process.argv.slice(2);
const split = (f) => { const s = fs.readFileSync(f, 'utf8').split('\n'); if (s[s.length - 1] === '') s.pop(); return s; };
const text = split(textF), ours = split(oursF), theirs = split(theirsF), vocab = split(vocabF);
const toks = (l) => l.split(' ').filter((x) => x !== '').map((i) => vocab[+i]).join(' ');
let bad = 0;
const n = Math.max(ours.length, theirs.length);
for (let i = 0; i < n; i++) {
  if (ours[i] === theirs[i]) continue;
  if (++bad <= +maxShown) {
    const esc = JSON.stringify(text[i] === undefined ? '' : text[i]).slice(0, 300);
    console.log(`  line ${i + 1}: ${esc}\n    ours: ${toks(ours[i] || '').slice(0, 300)}\n    HF  : ${toks(theirs[i] || '').slice(0, 300)}`);
  }
}
console.log(`${bad} ${n}`);
process.exit(bad ? 1 : 0);
