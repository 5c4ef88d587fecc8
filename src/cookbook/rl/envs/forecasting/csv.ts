// Python's `csv.DictReader(open(path, newline="", encoding="utf-8"))` with the default (excel)
// dialect, as the reference reads Prophet Arena: CPython's reader state machine fed line by line
// (lines end at \n, \r\n or a lone \r), blank records skipped, short rows padded with None and
// extra cells kept under no name, the 131072-character field limit. Each record also carries the
// physical line it starts on, for error messages.

export const CSV_FIELD_LIMIT = 131_072;

export class CsvFormatError extends Error {
  override name = 'CsvFormatError';
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(message);
  }
}

export interface CsvRecord {
  /** 1-based physical line the record starts on. */
  line: number;
  cells: string[];
}

type State = 'START_RECORD' | 'START_FIELD' | 'IN_FIELD' | 'IN_QUOTED_FIELD' | 'QUOTE_IN_QUOTED_FIELD' | 'EAT_CRNL';
const EOL = null;

/** The lines a text file opened with newline="" yields, terminators kept. */
function physicalLines(text: string): string[] {
  return text.match(/[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$/g) ?? [];
}

/** `list(csv.reader(...))`, blank lines included as empty records. */
export function readCsvRecords(text: string): CsvRecord[] {
  const records: CsvRecord[] = [];
  let state = 'START_RECORD' as State;
  let fields: string[] = [];
  let field = '';
  let fieldLen = 0;
  let lineNo = 0;
  let startLine = 1;
  const add = (c: string) => {
    if (fieldLen >= CSV_FIELD_LIMIT) throw new CsvFormatError(lineNo, `field larger than field limit (${CSV_FIELD_LIMIT})`);
    field += c;
    fieldLen++;
  };
  const save = () => {
    fields.push(field);
    field = '';
    fieldLen = 0;
  };
  const isNl = (c: string | null) => c === '\n' || c === '\r';
  const step = (c: string | null) => {
    switch (state) {
      case 'START_RECORD':
        if (c === EOL) return;
        if (isNl(c)) {
          state = 'EAT_CRNL';
          return;
        }
        state = 'START_FIELD';
      // falls through
      case 'START_FIELD':
        if (c === EOL || isNl(c)) {
          save();
          state = c === EOL ? 'START_RECORD' : 'EAT_CRNL';
        } else if (c === '"') state = 'IN_QUOTED_FIELD';
        else if (c === ',') save();
        else {
          add(c);
          state = 'IN_FIELD';
        }
        return;
      case 'IN_FIELD':
        if (c === EOL || isNl(c)) {
          save();
          state = c === EOL ? 'START_RECORD' : 'EAT_CRNL';
        } else if (c === ',') {
          save();
          state = 'START_FIELD';
        } else add(c);
        return;
      case 'IN_QUOTED_FIELD':
        if (c === EOL) return;
        if (c === '"') state = 'QUOTE_IN_QUOTED_FIELD';
        else add(c);
        return;
      case 'QUOTE_IN_QUOTED_FIELD':
        if (c === '"') {
          add(c);
          state = 'IN_QUOTED_FIELD';
        } else if (c === ',') {
          save();
          state = 'START_FIELD';
        } else if (c === EOL || isNl(c)) {
          save();
          state = c === EOL ? 'START_RECORD' : 'EAT_CRNL';
        } else {
          add(c);
          state = 'IN_FIELD';
        }
        return;
      case 'EAT_CRNL':
        if (isNl(c)) return;
        if (c === EOL) {
          state = 'START_RECORD';
          return;
        }
        throw new CsvFormatError(lineNo, "new-line character seen in unquoted field - do you need to open the file with newline=''?");
    }
  };
  for (const line of physicalLines(text)) {
    lineNo++;
    if (state === 'START_RECORD') startLine = lineNo;
    for (const c of line) step(c);
    step(EOL);
    if (state === 'START_RECORD') {
      records.push({ line: startLine, cells: fields });
      fields = [];
    }
  }
  // A quoted field left open at the end of the file ends the record (strict=False).
  if (fieldLen !== 0 || state === 'IN_QUOTED_FIELD') {
    save();
    records.push({ line: startLine, cells: fields });
  }
  return records;
}

export interface CsvRow {
  line: number;
  /** Column name → cell; null where the row is shorter than the header (DictReader's restval). */
  values: Map<string, string | null>;
}

/** `csv.DictReader`: the header (null for an empty file) and the non-blank rows after it. */
export function readCsvDicts(text: string): { fieldnames: string[] | null; rows: CsvRow[] } {
  const records = readCsvRecords(text);
  if (records.length === 0) return { fieldnames: null, rows: [] };
  const fieldnames = records[0].cells;
  const rows: CsvRow[] = [];
  for (const { line, cells } of records.slice(1)) {
    if (cells.length === 0) continue;
    const values = new Map<string, string | null>();
    fieldnames.forEach((name, i) => {
      if (i < cells.length) values.set(name, cells[i]);
    });
    for (const name of fieldnames.slice(cells.length)) values.set(name, null);
    rows.push({ line, values });
  }
  return { fieldnames, rows };
}
