#!/usr/bin/env node
// For the Unicode sweep of the parity check: groups the code points whose tokens differ between
// ours and HF's by the Unicode version that assigned them (DerivedAge.txt, Debian unicode-data),
// and by whether Unicode changed their general category after 9.0 (UnicodeData-9 not needed: the
// list of such code points is printed so it can be checked by hand).
//   node sweep_report.js SWEEP_TEXT OURS THEIRS [DerivedAge.txt]
const fs = require('fs');
const [textF, oursF, theirsF, ageF = '/usr/share/unicode/DerivedAge.txt'] = process.argv.slice(2);
const split = (f) => fs.readFileSync(f, 'utf8').split('\n');
const text = split(textF), ours = split(oursF), theirs = split(theirsF);
const ages = [];
if (fs.existsSync(ageF))
  for (const l of split(ageF)) {
    const m = /^([0-9A-F]+)(?:\.\.([0-9A-F]+))?\s*;\s*([0-9.]+)/.exec(l);
    if (m) ages.push([parseInt(m[1], 16), parseInt(m[2] || m[1], 16), m[3]]);
  }
const ageOf = (cp) => { for (const [a, b, v] of ages) if (cp >= a && cp <= b) return v; return 'unassigned'; };
const hist = {};
const old = [];
for (let i = 0; i < text.length; i++) {
  if (ours[i] === theirs[i] || !text[i]) continue;
  const cp = text[i].codePointAt(1);
  const age = ageOf(cp);
  hist[age] = (hist[age] || 0) + 1;
  if (!(parseFloat(age) > 9)) old.push(`U+${cp.toString(16).toUpperCase().padStart(4, '0')} (Unicode ${age})`);
}
console.log('mismatching code points by Unicode version that assigned them:',
  Object.entries(hist).sort((a, b) => parseFloat(a[0]) - parseFloat(b[0])).map(([k, v]) => `${k}: ${v}`).join(', '));
console.log(`assigned in Unicode <= 9.0: ${old.length}${old.length ? ' -> ' + old.join(', ') : ''}`);
