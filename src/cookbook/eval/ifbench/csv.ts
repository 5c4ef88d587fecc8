// Python's csv.reader (the excel dialect: `"` quotes, doubled quotes, no escape character, not
// strict) over io.StringIO(text), as IFBench's CSV checks read a response: its state machine
// (Modules/_csv.c), lines split at \n only, a blank line a row of no fields. Where Python raises
// csv.Error (a \r inside an unquoted line, a NUL) this throws.

const enum State {
  StartRecord,
  StartField,
  InField,
  InQuotedField,
  QuoteInQuotedField,
  EatCrnl,
}

export class CsvError extends Error {}

export function pyCsvRows(text: string, delimiter = ','): string[][] {
  const lines = text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
  const rows: string[][] = [];
  let state = State.StartRecord;
  let fields: string[] = [];
  let field = '';
  let fieldLen = 0;
  const save = () => {
    fields.push(field);
    field = '';
    fieldLen = 0;
  };
  const add = (c: string) => {
    field += c;
    fieldLen++;
  };
  // c === null is the end of a line (the C code's EOL).
  const step = (c: string | null) => {
    const newline = c === '\n' || c === '\r';
    switch (state) {
      case State.StartRecord:
        if (c === null) return;
        if (newline) {
          state = State.EatCrnl;
          return;
        }
        state = State.StartField;
      // falls through
      case State.StartField:
        if (newline || c === null) {
          save();
          state = c === null ? State.StartRecord : State.EatCrnl;
        } else if (c === '"') state = State.InQuotedField;
        else if (c === delimiter) save();
        else {
          add(c);
          state = State.InField;
        }
        return;
      case State.InField:
        if (newline || c === null) {
          save();
          state = c === null ? State.StartRecord : State.EatCrnl;
        } else if (c === delimiter) {
          save();
          state = State.StartField;
        } else add(c);
        return;
      case State.InQuotedField:
        if (c === null) return;
        if (c === '"') state = State.QuoteInQuotedField;
        else add(c);
        return;
      case State.QuoteInQuotedField:
        if (c === '"') {
          add(c);
          state = State.InQuotedField;
        } else if (c === delimiter) {
          save();
          state = State.StartField;
        } else if (newline || c === null) {
          save();
          state = c === null ? State.StartRecord : State.EatCrnl;
        } else {
          add(c!);
          state = State.InField;
        }
        return;
      case State.EatCrnl:
        if (newline) return;
        if (c === null) state = State.StartRecord;
        else throw new CsvError("new-line character seen in unquoted field - do you need to open the file with newline=''?");
        return;
    }
  };
  // `step` moves the state; read through this so the compiler does not narrow it across calls.
  const now = (): State => state;
  let i = 0;
  while (i < lines.length) {
    fields = [];
    do {
      if (i >= lines.length) {
        // The input ends inside a record: Python keeps it only with a field under way.
        if (fieldLen !== 0 || now() === State.InQuotedField) {
          save();
          rows.push(fields);
        }
        return rows;
      }
      for (const c of lines[i++]!) {
        if (c === '\0') throw new CsvError('line contains NUL');
        step(c);
      }
      step(null);
    } while (now() !== State.StartRecord);
    rows.push(fields);
  }
  return rows;
}
