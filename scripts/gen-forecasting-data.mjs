#!/usr/bin/env node
// Generates data/forecasting/questions.csv: a small, clearly synthetic question set in Prophet
// Arena's layout (the columns the reference's recipes/forecasting/data.py reads: submission_id,
// event_ticker, title, snapshot_time, close_time, market_outcome, category, markets, sources).
// Fictional places and teams; every event resolved. The reference material leans toward the
// outcome (a poll lead, a forecast, a form guide), so the questions can be learned. Some events
// have several snapshots (the loader keeps the earliest), several markets (one question each),
// Python-literal cells instead of JSON, or close across the 2025-10-20 split (dropped by it).
// Deterministic: a fixed-seed PRNG.
//
// Usage: node scripts/gen-forecasting-data.mjs [outFile]   (default: <repo>/data/forecasting/questions.csv)

import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { rng } from './lib/rng.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = process.argv[2] ?? path.join(root, 'data/forecasting/questions.csv');

const rand = rng(20251020);
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const pick = (xs) => xs[Math.floor(rand() * xs.length)];

const TOWNS = ['Harborview', 'Lindenfall', 'Quarry Bay', 'Mossgate', 'Ostrava Flats', 'Pinecrest', 'Saltmarsh', 'Verdan', 'Kestrel Point', 'Ashby Vale'];
const TEAMS = ['Harborview Herons', 'Lindenfall Lynx', 'Mossgate Miners', 'Pinecrest Pilots', 'Saltmarsh Sharks', 'Verdan Vipers', 'Kestrel Kites', 'Ashby Anchors'];
const CANDIDATES = ['Mara Ellison', 'Tobias Renn', 'Ilse Morrow', 'Dev Okafor', 'Priya Halden', 'Jonas Weller'];

// Days from 2025-10-20 (the reference's split date); events before it close before it, events
// after it open after it, and a few cross it.
const DAY_MS = 86_400_000;
const SPLIT = Date.UTC(2025, 9, 20);
function stamp(ms, style) {
  const iso = new Date(ms).toISOString(); // 2025-10-20T12:34:56.789Z
  const micro = `${iso.slice(0, 19)}.${iso.slice(20, 23)}${String(int(0, 999)).padStart(3, '0')}`;
  if (style === 'z') return `${micro}Z`;
  if (style === 'offset') {
    // The same instant written in UTC-04:00.
    const local = new Date(ms - 4 * 3_600_000).toISOString();
    return `${local.slice(0, 19)}-04:00`;
  }
  if (style === 'naive') return iso.slice(0, 19).replace('T', ' ');
  return `${micro}+00:00`;
}
const hours = (n) => n * 3_600_000;

/** One event: its markets, which one(s) resolve YES, and sources hinting at them. */
function sportsEvent() {
  const [a, b] = [pick(TEAMS), pick(TEAMS)];
  if (a === b) return sportsEvent();
  const winner = pick([a, a, b, 'Tie']);
  const favourite = winner === 'Tie' ? a : winner;
  const other = favourite === a ? b : a;
  return {
    category: 'Sports',
    title: `Synthetic league: ${a} vs ${b}`,
    markets: [a, b, 'Tie'],
    yes: [winner],
    sources: [
      [`${favourite} form guide (synthetic)`, `Synthetic preview: ${favourite} have won ${int(4, 7)} of their last 8 fixtures, while ${other} have won ${int(1, 3)}.`],
      [`Injury report (synthetic)`, winner === 'Tie' ? `Both sides report a full squad; the synthetic bookmakers price this as an even contest.` : `${other} are missing ${int(2, 4)} first-choice players through injury.`],
    ],
  };
}

function electionEvent() {
  const town = pick(TOWNS);
  const [x, y] = [pick(CANDIDATES), pick(CANDIDATES)];
  if (x === y) return electionEvent();
  const winner = rand() < 0.7 ? x : y;
  const lead = int(3, 14);
  return {
    category: 'Politics',
    title: `Synthetic election: ${town} mayoral race`,
    markets: [x, y],
    yes: [winner],
    sources: [
      [`${town} Ledger poll (synthetic)`, `A synthetic poll of ${int(400, 1200)} likely voters puts ${winner} ahead by ${lead} points.`],
      [`Campaign finance filings (synthetic)`, `${winner} reports raising ${int(2, 4)} times as much as the opponent in the last quarter.`],
    ],
  };
}

function rateEvent() {
  const town = pick(TOWNS);
  const hike = rand() < 0.45;
  return {
    category: 'Economics',
    title: `Synthetic central bank of ${town}: rate decision`,
    markets: ['Rate increase', 'Rate unchanged'],
    yes: [hike ? 'Rate increase' : 'Rate unchanged'],
    sources: [
      [`Inflation print (synthetic)`, hike ? `Synthetic inflation rose to ${int(5, 8)}.${int(0, 9)}%, well above the 2% target.` : `Synthetic inflation eased to ${int(1, 2)}.${int(0, 9)}%, close to the 2% target.`],
      [`Board minutes (synthetic)`, hike ? 'Most members of the synthetic board called for tighter policy.' : 'The synthetic board signalled patience at its last meeting.'],
    ],
  };
}

function weatherEvent() {
  const town = pick(TOWNS);
  const above = int(18, 34);
  const hot = rand() < 0.5;
  return {
    category: 'Weather',
    title: `Synthetic weather: ${town} high temperature`,
    markets: [`Above ${above}°C`],
    yes: hot ? [`Above ${above}°C`] : [],
    sources: [[`${town} met office outlook (synthetic)`, hot ? `The synthetic outlook expects a heat dome with highs near ${above + int(2, 5)}°C.` : `The synthetic outlook expects a cool front; highs near ${above - int(3, 7)}°C.`]],
  };
}

function launchEvent() {
  const town = pick(TOWNS);
  const launches = rand() < 0.6;
  return {
    category: 'Science and Technology',
    title: `Synthetic launch: ${town} Aerospace orbital test`,
    markets: ['Launch succeeds'],
    yes: launches ? ['Launch succeeds'] : [],
    sources: [
      [`Static fire report (synthetic)`, launches ? 'The synthetic static fire ran its full duration with no anomalies.' : 'The synthetic static fire was aborted early after a valve fault.'],
      [`Range schedule (synthetic)`, `The synthetic range has reserved a ${int(2, 4)}-hour window.\nA backup window follows ${int(1, 3)} days later.`],
    ],
  };
}

const MAKERS = [sportsEvent, electionEvent, rateEvent, weatherEvent, launchEvent];

/** Python repr of a str, for the rows that store cells as Python literals. */
const pyStr = (s) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'`;
function cells(event, literal) {
  const outcome = Object.fromEntries(event.markets.map((m) => [m, event.yes.includes(m) ? 1 : 0]));
  const sources = event.sources.map(([title, summary], i) => ({ title, summary, ranking: i + 1 }));
  if (!literal) return { markets: JSON.stringify(event.markets), market_outcome: JSON.stringify(outcome), sources: JSON.stringify(sources) };
  return {
    markets: `[${event.markets.map(pyStr).join(', ')}]`,
    market_outcome: `{${event.markets.map((m) => `${pyStr(m)}: ${outcome[m]}`).join(', ')}}`,
    sources: `[${sources.map((s) => `{'title': ${pyStr(s.title)}, 'summary': ${pyStr(s.summary)}, 'ranking': ${s.ranking}}`).join(', ')}]`,
  };
}

const COLUMNS = ['submission_id', 'event_ticker', 'title', 'snapshot_time', 'close_time', 'market_outcome', 'category', 'markets', 'sources'];
const quote = (v) => (/[",\n\r]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);

const rows = [];
let submission = 1000;
const N_EVENTS = 48;
for (let e = 0; e < N_EVENTS; e++) {
  const event = MAKERS[e % MAKERS.length]();
  // 30 events close before the split, 12 open after it, 6 cross it.
  const kind = e < 30 ? 'train' : e < 42 ? 'validation' : 'crossing';
  const open =
    kind === 'train' ? SPLIT - int(20, 120) * DAY_MS + hours(int(0, 23)) : kind === 'validation' ? SPLIT + int(0, 40) * DAY_MS + hours(int(1, 23)) : SPLIT - int(2, 10) * DAY_MS;
  const close = (kind === 'train' ? Math.min(open + int(2, 15) * DAY_MS, SPLIT - hours(int(1, 40))) : open + int(12, 30) * DAY_MS) + int(0, 3599) * 1000;
  const closeStamp = stamp(close, 'utc');
  const ticker = `SYN-${event.category.slice(0, 3).toUpperCase()}-${String(e + 1).padStart(3, '0')}`;
  const snapshots = e % 4 === 0 ? 2 : 1;
  for (let s = 0; s < snapshots; s++) {
    const at = open + s * hours(int(6, 30)) + int(0, 3599) * 1000;
    const style = e % 7 === 3 ? 'offset' : e % 11 === 5 ? 'naive' : e % 2 ? 'z' : 'utc';
    const later = s > 0 ? { ...event, sources: [...event.sources, [`Update ${s} (synthetic)`, 'A later synthetic snapshot adds this note.']] } : event;
    rows.push({
      submission_id: `syn-${submission++}`,
      event_ticker: ticker,
      title: event.title,
      snapshot_time: stamp(at, style),
      close_time: closeStamp,
      category: event.category,
      ...cells(later, e % 6 === 5),
    });
  }
}
// Snapshots are listed newest first for some events, as a scrape might hold them.
rows.sort((a, b) => (a.event_ticker === b.event_ticker ? (a.event_ticker.endsWith('5') ? -1 : 1) * a.submission_id.localeCompare(b.submission_id) : 0));

const text = [COLUMNS.join(','), ...rows.map((r) => COLUMNS.map((c) => quote(r[c])).join(','))].join('\n') + '\n';
mkdirSync(path.dirname(out), { recursive: true });
writeFileSync(out, text);
console.log(`wrote ${rows.length} snapshots of ${N_EVENTS} events to ${path.relative(root, out)}`);
