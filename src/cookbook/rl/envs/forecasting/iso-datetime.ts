// The reference's parse_utc_datetime: Python 3.11's `datetime.fromisoformat(value.replace("Z",
// "+00:00"))`, naive values taken as UTC, then `.astimezone(UTC)`; and `isoformat()` of the result.
// Microseconds matter (the prompt prints them), so an instant is a bigint of microseconds, not a
// JS Date. The parser follows CPython's fromisoformat step by step (ASCII digits only, as its C
// implementation reads them).

const DAY_US = 86_400_000_000n;
const MIN_ORDINAL = 1; // 0001-01-01
const MAX_ORDINAL = 3_652_059; // 9999-12-31

/** An instant in UTC, as microseconds since 0001-01-01T00:00 (Python's ordinal day 1). */
export class UtcInstant {
  constructor(readonly us: bigint) {}

  compare(other: UtcInstant): number {
    return this.us < other.us ? -1 : this.us > other.us ? 1 : 0;
  }

  /** `datetime.isoformat()` of a UTC-aware datetime: microseconds only when non-zero. */
  isoformat(): string {
    const ordinal = Number(this.us / DAY_US) + 1;
    let rest = this.us % DAY_US;
    const micro = Number(rest % 1_000_000n);
    rest /= 1_000_000n;
    const secs = Number(rest);
    const [y, m, d] = ordinalToYmd(ordinal);
    const p = (n: number, w = 2) => String(n).padStart(w, '0');
    const time = `${p(Math.floor(secs / 3600))}:${p(Math.floor(secs / 60) % 60)}:${p(secs % 60)}${micro ? `.${p(micro, 6)}` : ''}`;
    return `${p(y, 4)}-${p(m)}-${p(d)}T${time}+00:00`;
  }
}

export class IsoFormatError extends Error {
  override name = 'IsoFormatError';
}

const isLeap = (y: number) => y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
const DAYS_IN_MONTH = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const daysInMonth = (y: number, m: number) => (m === 2 && isLeap(y) ? 29 : DAYS_IN_MONTH[m]);
const daysBeforeYear = (y: number) => (y - 1) * 365 + Math.floor((y - 1) / 4) - Math.floor((y - 1) / 100) + Math.floor((y - 1) / 400);

function ymdToOrdinal(y: number, m: number, d: number): number {
  let days = daysBeforeYear(y);
  for (let i = 1; i < m; i++) days += daysInMonth(y, i);
  return days + d;
}

function ordinalToYmd(ordinal: number): [number, number, number] {
  let y = Math.floor((ordinal - 1) / 365.2425) + 1;
  while (daysBeforeYear(y + 1) < ordinal) y++;
  while (daysBeforeYear(y) >= ordinal) y--;
  let rest = ordinal - daysBeforeYear(y);
  let m = 1;
  while (rest > daysInMonth(y, m)) rest -= daysInMonth(y, m++);
  return [y, m, rest];
}

const isDigit = (c: string | undefined) => c !== undefined && c >= '0' && c <= '9';

/** CPython's int() of a fixed-width ASCII digit run; anything else is invalid. */
function digits(s: string, from: number, count: number): number {
  const part = s.slice(from, from + count);
  if (part.length !== count || ![...part].every(isDigit)) throw new IsoFormatError('invalid digits');
  return Number(part);
}

function separatorIndex(s: string): number {
  const n = s.length;
  if (n === 7) return 7;
  if (s[4] === '-') {
    if (s[5] !== 'W') return 10;
    if (n > 8 && s[8] === '-') {
      if (n === 9) throw new IsoFormatError('Invalid ISO string');
      if (n > 10 && isDigit(s[10])) return 8;
      return 10;
    }
    return 8;
  }
  if (s[4] === 'W') {
    let i = 7;
    while (i < n && isDigit(s[i])) i++;
    if (i < 9) return i;
    return i % 2 === 0 ? 7 : 8;
  }
  return 8;
}

function isoWeekToOrdinal(year: number, week: number, day: number): number {
  if (year < 1 || year > 9999) throw new IsoFormatError(`Year is out of range: ${year}`);
  if (!(week > 0 && week < 53)) {
    const firstWeekday = ymdToOrdinal(year, 1, 1) % 7;
    if (!(week === 53 && (firstWeekday === 4 || (firstWeekday === 3 && isLeap(year))))) throw new IsoFormatError(`Invalid week: ${week}`);
  }
  if (!(day > 0 && day < 8)) throw new IsoFormatError(`Invalid weekday: ${day}`);
  const firstDay = ymdToOrdinal(year, 1, 1);
  const firstWeekday = (firstDay + 6) % 7; // Monday = 0
  let week1Monday = firstDay - firstWeekday;
  if (firstWeekday > 3) week1Monday += 7;
  return week1Monday + (week - 1) * 7 + (day - 1);
}

/** The date part (7, 8 or 10 characters) as a Python ordinal. */
function parseDate(s: string): number {
  if (![7, 8, 10].includes(s.length)) throw new IsoFormatError('bad date length');
  const year = digits(s, 0, 4);
  const hasSep = s[4] === '-';
  let pos = 4 + (hasSep ? 1 : 0);
  if (s[pos] === 'W') {
    pos++;
    const week = digits(s, pos, 2);
    pos += 2;
    let day = 1;
    if (s.length > pos) {
      if ((s[pos] === '-') !== hasSep) throw new IsoFormatError('Inconsistent use of dash separator');
      pos += hasSep ? 1 : 0;
      day = digits(s, pos, 1);
      if (pos + 1 !== s.length) throw new IsoFormatError('trailing characters');
    }
    return isoWeekToOrdinal(year, week, day);
  }
  const month = digits(s, pos, 2);
  pos += 2;
  if ((s[pos] === '-') !== hasSep) throw new IsoFormatError('Inconsistent use of dash separator');
  pos += hasSep ? 1 : 0;
  const day = digits(s, pos, 2);
  if (pos + 2 !== s.length) throw new IsoFormatError('trailing characters');
  if (year < 1 || year > 9999) throw new IsoFormatError('year is out of range');
  if (month < 1 || month > 12) throw new IsoFormatError('month must be in 1..12');
  if (day < 1 || day > daysInMonth(year, month)) throw new IsoFormatError('day is out of range for month');
  return ymdToOrdinal(year, month, day);
}

/** HH[:?MM[:?SS[{.,}fff[fff]]]] as [h, m, s, µs]. */
function parseClock(s: string): [number, number, number, number] {
  const comps = [0, 0, 0, 0];
  let pos = 0;
  let hasSep = false;
  for (let comp = 0; comp < 3; comp++) {
    if (s.length - pos < 2) throw new IsoFormatError('Incomplete time component');
    comps[comp] = digits(s, pos, 2);
    pos += 2;
    const next = s[pos];
    if (comp === 0) hasSep = next === ':';
    if (next === undefined || comp >= 2) break;
    if (hasSep && next !== ':') throw new IsoFormatError('Invalid time separator');
    pos += hasSep ? 1 : 0;
  }
  if (pos < s.length) {
    if (s[pos] !== '.' && s[pos] !== ',') throw new IsoFormatError('Invalid microsecond component');
    pos++;
    const remainder = s.length - pos;
    const take = Math.min(remainder, 6);
    if (take === 0) throw new IsoFormatError('empty fraction');
    comps[3] = digits(s, pos, take) * 10 ** (6 - take);
    if (![...s.slice(pos + take)].every(isDigit)) throw new IsoFormatError('Non-digit values in unparsed fraction');
  }
  return comps as [number, number, number, number];
}

/** The time part: [µs of day, offset µs or null for naive]. */
function parseTime(s: string): [bigint, bigint | null] {
  if (s.length < 2) throw new IsoFormatError('Isoformat time too short');
  const idx = [s.indexOf('-'), s.indexOf('+'), s.indexOf('Z')].find((i) => i >= 0) ?? -1;
  const [h, m, sec, us] = parseClock(idx >= 0 ? s.slice(0, idx) : s);
  if (h > 23) throw new IsoFormatError('hour must be in 0..23');
  if (m > 59) throw new IsoFormatError('minute must be in 0..59');
  if (sec > 59) throw new IsoFormatError('second must be in 0..59');
  const clock = BigInt(((h * 60 + m) * 60 + sec) * 1_000_000 + us);
  if (idx < 0) return [clock, null];
  if (idx === s.length - 1 && s[idx] === 'Z') return [clock, 0n];
  const tz = s.slice(idx + 1);
  if ([0, 1, 3].includes(tz.length)) throw new IsoFormatError('Malformed time zone string');
  const [th, tm, ts, tus] = parseClock(tz);
  const magnitude = BigInt(((th * 60 + tm) * 60 + ts) * 1_000_000 + tus);
  if (magnitude >= DAY_US) throw new IsoFormatError('offset must be strictly between -24h and 24h');
  return [clock, s[idx] === '-' ? -magnitude : magnitude];
}

/** `parse_utc_datetime(value)`: throws IsoFormatError where Python raises ValueError. */
export function parseUtcDatetime(value: string): UtcInstant {
  const s = value.replaceAll('Z', '+00:00');
  if (s.length < 7) throw new IsoFormatError(`Invalid isoformat string: ${value}`);
  const sep = separatorIndex(s);
  const ordinal = parseDate(s.slice(0, sep));
  // Anything after the date needs a time (CPython's C parser; "2025-07-08T" is refused).
  const [clock, offset] = sep < s.length ? parseTime(s.slice(sep + 1)) : [0n, null];
  const us = BigInt(ordinal - 1) * DAY_US + clock - (offset ?? 0n);
  if (us < BigInt(MIN_ORDINAL - 1) * DAY_US || us >= BigInt(MAX_ORDINAL) * DAY_US) throw new IsoFormatError('date value out of range');
  return new UtcInstant(us);
}
