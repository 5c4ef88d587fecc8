// task.yaml's top-level `instruction` as the reference reads it (yaml.safe_load(...).get(
// "instruction", "")), for the scalar forms task files write it in: a block scalar (| or >, with
// chomping and indentation indicators), a double- or single-quoted scalar over one or more lines,
// or a plain one. Line folding follows PyYAML's scanner. Other YAML (anchors, tags, flow
// collections as the value) is not read: such a value counts as absent, as the reference's
// fallback then takes the row's other columns.

const BREAK = /\r\n|\r|\n/;

const spaces = (line: string) => /^ */.exec(line)![0].length;

/** A `|`/`>` block scalar whose header is `header`, its content the lines after it. */
function blockScalar(header: string, lines: string[]): string {
  const m = /^([|>])([-+]?)([1-9]?)([-+]?)\s*(#.*)?$/.exec(header);
  if (!m) return '';
  const folded = m[1] === '>';
  const chomp = m[2] || m[4];
  let indent = m[3] ? Number(m[3]) : 0;
  if (!indent) {
    indent = 1;
    for (const line of lines) {
      indent = Math.max(indent, spaces(line));
      if (line.trim() !== '') break;
    }
  }
  const chunks: string[] = [];
  let breaks: string[] = [];
  let i = 0;
  // Leading blank lines.
  while (i < lines.length && lines[i].trim() === '' && spaces(lines[i]) <= indent) breaks.push('\n'), i++;
  let lineBreak = '';
  while (i < lines.length && spaces(lines[i]) >= indent && lines[i].length > indent) {
    chunks.push(...breaks);
    const text = lines[i].slice(indent);
    const leadingNonSpace = text[0] !== ' ' && text[0] !== '\t';
    chunks.push(text);
    lineBreak = i + 1 < lines.length ? '\n' : '';
    i++;
    breaks = [];
    while (i < lines.length && lines[i].trim() === '' && (spaces(lines[i]) <= indent || lines[i].length <= indent)) breaks.push('\n'), i++;
    const next = lines[i];
    if (next !== undefined && spaces(next) >= indent && next.length > indent) {
      const nextText = next.slice(indent);
      if (folded && lineBreak === '\n' && leadingNonSpace && nextText[0] !== ' ' && nextText[0] !== '\t') {
        if (!breaks.length) chunks.push(' ');
      } else chunks.push(lineBreak);
    }
  }
  if (chomp !== '-') chunks.push(lineBreak);
  if (chomp === '+') chunks.push(...breaks);
  return chunks.join('');
}

const ESCAPES: Record<string, string> = {
  '0': '\0', a: '\x07', b: '\b', t: '\t', '\t': '\t', n: '\n', v: '\v', f: '\f', r: '\r', e: '\x1b',
  ' ': ' ', '"': '"', '/': '/', '\\': '\\', N: '\x85', _: '\xa0', L: '\u2028', P: '\u2029',
};
const HEX_ESCAPES: Record<string, number> = { x: 2, u: 4, U: 8 };

/** A quoted scalar starting at `text[0]` (the quote); its value and whether it closed. */
function quotedScalar(text: string): string | null {
  const double = text[0] === '"';
  const out: string[] = [];
  let i = 1;
  while (i < text.length) {
    const c = text[i];
    if (double && c === '"') return out.join('');
    if (!double && c === "'") {
      if (text[i + 1] === "'") {
        out.push("'");
        i += 2;
        continue;
      }
      return out.join('');
    }
    if (double && c === '\\') {
      const e = text[i + 1];
      if (e === '\n') {
        // An escaped line break: nothing, and the next lines' leading blanks dropped.
        i += 2;
        while (i < text.length && /[ \t\n]/.test(text[i])) {
          if (text[i] === '\n') out.push('\n');
          i++;
        }
        continue;
      }
      if (e in ESCAPES) {
        out.push(ESCAPES[e]);
        i += 2;
        continue;
      }
      if (e in HEX_ESCAPES) {
        const hex = text.slice(i + 2, i + 2 + HEX_ESCAPES[e]);
        if (!/^[0-9A-Fa-f]+$/.test(hex) || hex.length !== HEX_ESCAPES[e]) return null;
        out.push(String.fromCodePoint(parseInt(hex, 16)));
        i += 2 + hex.length;
        continue;
      }
      return null;
    }
    if (c === ' ' || c === '\t' || c === '\n') {
      let j = i;
      while (j < text.length && (text[j] === ' ' || text[j] === '\t')) j++;
      if (text[j] !== '\n') {
        out.push(text.slice(i, j));
        i = j;
        continue;
      }
      // Folded line breaks: one is a space, each further one a newline.
      j++;
      let breaks = 0;
      for (;;) {
        while (j < text.length && (text[j] === ' ' || text[j] === '\t')) j++;
        if (text[j] !== '\n') break;
        breaks++;
        j++;
      }
      out.push(breaks ? '\n'.repeat(breaks) : ' ');
      i = j;
      continue;
    }
    out.push(c);
    i++;
  }
  return null;
}

/** A plain scalar: its first line's text and the more-indented lines after it, folded; PyYAML's resolution of null and booleans. */
function plainScalar(first: string, rest: string[]): string {
  const cut = (s: string) => s.replace(/(^|\s)#.*$/, '').trim();
  const parts = [cut(first)];
  for (const line of rest) {
    if (line.trim() === '') {
      parts.push('');
      continue;
    }
    if (spaces(line) < 1 || line.trimStart().startsWith('#')) break;
    parts.push(cut(line));
  }
  while (parts.length && parts.at(-1) === '') parts.pop();
  let value = '';
  let blank = 0;
  parts.forEach((p, k) => {
    if (p === '') return void blank++;
    value += k === 0 ? p : blank ? '\n'.repeat(blank) + p : ` ${p}`;
    blank = 0;
  });
  if (/^(~|null|Null|NULL)?$/.test(value)) return '';
  if (/^(false|False|FALSE|no|No|NO|off|Off|OFF)$/.test(value)) return '';
  if (/^(true|True|TRUE|yes|Yes|YES|on|On|ON)$/.test(value)) return 'True';
  return value;
}

/** task.yaml's top-level `instruction` (the last, as PyYAML keeps the last of a repeated key), or '' when there is none. */
export function yamlInstruction(yaml: string): string {
  const lines = yaml.split(BREAK);
  let at = -1;
  for (let i = 0; i < lines.length; i++) if (/^instruction[ \t]*:([ \t]|$)/.test(lines[i])) at = i;
  if (at === -1) return '';
  const value = lines[at].replace(/^instruction[ \t]*:/, '').trimStart();
  const after = lines.slice(at + 1);
  if (value.startsWith('|') || value.startsWith('>')) return blockScalar(value, after);
  if (value.startsWith('"') || value.startsWith("'")) {
    // The scalar may run over the following (indented) lines.
    const body = [value, ...after].join('\n');
    return quotedScalar(body) ?? '';
  }
  if (/^[[{&*!%@`]/.test(value)) return '';
  return plainScalar(value, after);
}
