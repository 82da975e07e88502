#!/usr/bin/env node
// Explains the mismatches of the Unicode sweep (parity check --sweep). HF's BertNormalizer and
// BertPreTokenizer take categories from Unicode 8.0 tables (Rust crate unicode_categories), we from
// utf8proc (Unicode 15). A mismatching code point is explained when Unicode assigned it after 8.0
// (DerivedAge.txt, Debian package unicode-data) or when its general category changed after 8.0
// (the six listed in CHANGED). Prints a summary; last line: "<unexplained> <mismatches>".
//   node sweep_report.js SWEEP_TEXT OURS THEIRS [DerivedAge.txt]
const fs = require('fs');
const [textF, oursF, theirsF, ageF = '/usr/share/unicode/DerivedAge.txt'] = process.argv.slice(2);
const CHANGED = {
  0x166d: 'Po -> So in Unicode 12', 0x1734: 'Mn -> Mc in Unicode 14', 0x1885: 'Lo -> Mn in Unicode 9',
  0x1886: 'Lo -> Mn in Unicode 9', 0xa9bd: 'Mc -> Mn in Unicode 12', 0x111c9: 'Po -> Mn in Unicode 11',
};
const split = (f) => fs.readFileSync(f, 'utf8').split('\n');
const text = split(textF), ours = split(oursF), theirs = split(theirsF);
const ages = [];
const haveAges = fs.existsSync(ageF);
if (haveAges)
  for (const l of split(ageF)) {
    const m = /^([0-9A-F]+)(?:\.\.([0-9A-F]+))?\s*;\s*([0-9.]+)/.exec(l);
    if (m) ages.push([parseInt(m[1], 16), parseInt(m[2] || m[1], 16), m[3]]);
  }
const ageOf = (cp) => { for (const [a, b, v] of ages) if (cp >= a && cp <= b) return v; return 'unassigned'; };
const hist = {};
const unexplained = [];
let bad = 0;
for (let i = 0; i < text.length; i++) {
  if (ours[i] === theirs[i] || !text[i]) continue;
  ++bad;
  const cp = text[i].codePointAt(1);
  const age = haveAges ? ageOf(cp) : '?';
  hist[age] = (hist[age] || 0) + 1;
  const hex = `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
  if (CHANGED[cp]) console.log(`  ${hex}: category changed (${CHANGED[cp]})`);
  else if (!(parseFloat(age) > 8)) unexplained.push(`${hex} (Unicode ${age})`);
}
if (!haveAges) console.log(`  (install Debian's unicode-data to check the ages of the ${bad} mismatching code points)`);
console.log('  mismatching code points by the Unicode version that assigned them: ' +
  Object.entries(hist).sort((a, b) => parseFloat(a[0]) - parseFloat(b[0])).map(([k, v]) => `${k}: ${v}`).join(', '));
if (unexplained.length) console.log(`  unexplained: ${unexplained.join(', ')}`);
console.log(`${haveAges ? unexplained.length : 0} ${bad}`);
