#!/usr/bin/env node
// Writes the search_tool recipe's shipped sample (data/search_tool/): a corpus of short
// encyclopedia-style passages about countries and chemical elements, and Search-R1-shaped questions
// ({question, answer: [golds], data_source}) answerable from it: `single_hop` (one search) and
// `multi_hop` (the answer of one search names what the second must look up). Every fourth question
// of each source is held out as the test split. Deterministic: rerunning rewrites the same files.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const OUT = path.join(import.meta.dirname, '..', 'data', 'search_tool');

// [country, capital, continent, currency, official language (null where there are several)]
const COUNTRIES = [
  ['France', 'Paris', 'Europe', 'euro', 'French'],
  ['Germany', 'Berlin', 'Europe', 'euro', 'German'],
  ['Italy', 'Rome', 'Europe', 'euro', 'Italian'],
  ['Spain', 'Madrid', 'Europe', 'euro', 'Spanish'],
  ['Portugal', 'Lisbon', 'Europe', 'euro', 'Portuguese'],
  ['the Netherlands', 'Amsterdam', 'Europe', 'euro', 'Dutch'],
  ['Austria', 'Vienna', 'Europe', 'euro', 'German'],
  ['Greece', 'Athens', 'Europe', 'euro', 'Greek'],
  ['Croatia', 'Zagreb', 'Europe', 'euro', 'Croatian'],
  ['Poland', 'Warsaw', 'Europe', 'zloty', 'Polish'],
  ['Sweden', 'Stockholm', 'Europe', 'Swedish krona', 'Swedish'],
  ['Norway', 'Oslo', 'Europe', 'Norwegian krone', 'Norwegian'],
  ['Denmark', 'Copenhagen', 'Europe', 'Danish krone', 'Danish'],
  ['Iceland', 'Reykjavik', 'Europe', 'Icelandic krona', 'Icelandic'],
  ['Hungary', 'Budapest', 'Europe', 'forint', 'Hungarian'],
  ['the Czech Republic', 'Prague', 'Europe', 'Czech koruna', 'Czech'],
  ['Romania', 'Bucharest', 'Europe', 'Romanian leu', 'Romanian'],
  ['Ukraine', 'Kyiv', 'Europe', 'hryvnia', 'Ukrainian'],
  ['Japan', 'Tokyo', 'Asia', 'yen', 'Japanese'],
  ['China', 'Beijing', 'Asia', 'renminbi', null],
  ['South Korea', 'Seoul', 'Asia', 'South Korean won', 'Korean'],
  ['India', 'New Delhi', 'Asia', 'Indian rupee', null],
  ['Thailand', 'Bangkok', 'Asia', 'baht', 'Thai'],
  ['Vietnam', 'Hanoi', 'Asia', 'dong', 'Vietnamese'],
  ['Indonesia', 'Jakarta', 'Asia', 'rupiah', 'Indonesian'],
  ['the Philippines', 'Manila', 'Asia', 'Philippine peso', null],
  ['Malaysia', 'Kuala Lumpur', 'Asia', 'ringgit', 'Malay'],
  ['Pakistan', 'Islamabad', 'Asia', 'Pakistani rupee', null],
  ['Bangladesh', 'Dhaka', 'Asia', 'taka', 'Bengali'],
  ['Nepal', 'Kathmandu', 'Asia', 'Nepalese rupee', 'Nepali'],
  ['Mongolia', 'Ulaanbaatar', 'Asia', 'tugrik', 'Mongolian'],
  ['Iran', 'Tehran', 'Asia', 'rial', 'Persian'],
  ['Saudi Arabia', 'Riyadh', 'Asia', 'Saudi riyal', 'Arabic'],
  ['Egypt', 'Cairo', 'Africa', 'Egyptian pound', 'Arabic'],
  ['Kenya', 'Nairobi', 'Africa', 'Kenyan shilling', null],
  ['Nigeria', 'Abuja', 'Africa', 'naira', 'English'],
  ['Ghana', 'Accra', 'Africa', 'cedi', 'English'],
  ['Ethiopia', 'Addis Ababa', 'Africa', 'birr', null],
  ['Morocco', 'Rabat', 'Africa', 'Moroccan dirham', null],
  ['Tanzania', 'Dodoma', 'Africa', 'Tanzanian shilling', null],
  ['Uganda', 'Kampala', 'Africa', 'Ugandan shilling', null],
  ['Algeria', 'Algiers', 'Africa', 'Algerian dinar', null],
  ['Tunisia', 'Tunis', 'Africa', 'Tunisian dinar', 'Arabic'],
  ['Senegal', 'Dakar', 'Africa', 'CFA franc', 'French'],
  ['Zambia', 'Lusaka', 'Africa', 'kwacha', 'English'],
  ['Botswana', 'Gaborone', 'Africa', 'pula', null],
  ['Angola', 'Luanda', 'Africa', 'kwanza', 'Portuguese'],
  ['Brazil', 'Brasilia', 'South America', 'Brazilian real', 'Portuguese'],
  ['Argentina', 'Buenos Aires', 'South America', 'Argentine peso', 'Spanish'],
  ['Chile', 'Santiago', 'South America', 'Chilean peso', 'Spanish'],
  ['Peru', 'Lima', 'South America', 'sol', null],
  ['Colombia', 'Bogota', 'South America', 'Colombian peso', 'Spanish'],
  ['Venezuela', 'Caracas', 'South America', 'bolivar', 'Spanish'],
  ['Uruguay', 'Montevideo', 'South America', 'Uruguayan peso', 'Spanish'],
  ['Paraguay', 'Asuncion', 'South America', 'guarani', null],
  ['Ecuador', 'Quito', 'South America', 'United States dollar', 'Spanish'],
  ['Mexico', 'Mexico City', 'North America', 'Mexican peso', null],
  ['Canada', 'Ottawa', 'North America', 'Canadian dollar', null],
  ['Cuba', 'Havana', 'North America', 'Cuban peso', 'Spanish'],
  ['Jamaica', 'Kingston', 'North America', 'Jamaican dollar', 'English'],
  ['Australia', 'Canberra', 'Oceania', 'Australian dollar', null],
  ['New Zealand', 'Wellington', 'Oceania', 'New Zealand dollar', null],
  ['Fiji', 'Suva', 'Oceania', 'Fijian dollar', null],
];

// [element, symbol, atomic number, group]
const ELEMENTS = [
  ['hydrogen', 'H', 1, 'nonmetal'],
  ['helium', 'He', 2, 'noble gas'],
  ['lithium', 'Li', 3, 'alkali metal'],
  ['beryllium', 'Be', 4, 'alkaline earth metal'],
  ['boron', 'B', 5, 'metalloid'],
  ['carbon', 'C', 6, 'nonmetal'],
  ['nitrogen', 'N', 7, 'nonmetal'],
  ['oxygen', 'O', 8, 'nonmetal'],
  ['fluorine', 'F', 9, 'halogen'],
  ['neon', 'Ne', 10, 'noble gas'],
  ['sodium', 'Na', 11, 'alkali metal'],
  ['magnesium', 'Mg', 12, 'alkaline earth metal'],
  ['aluminium', 'Al', 13, 'post-transition metal'],
  ['silicon', 'Si', 14, 'metalloid'],
  ['phosphorus', 'P', 15, 'nonmetal'],
  ['sulfur', 'S', 16, 'nonmetal'],
  ['chlorine', 'Cl', 17, 'halogen'],
  ['argon', 'Ar', 18, 'noble gas'],
  ['potassium', 'K', 19, 'alkali metal'],
  ['calcium', 'Ca', 20, 'alkaline earth metal'],
  ['titanium', 'Ti', 22, 'transition metal'],
  ['chromium', 'Cr', 24, 'transition metal'],
  ['manganese', 'Mn', 25, 'transition metal'],
  ['iron', 'Fe', 26, 'transition metal'],
  ['cobalt', 'Co', 27, 'transition metal'],
  ['nickel', 'Ni', 28, 'transition metal'],
  ['copper', 'Cu', 29, 'transition metal'],
  ['zinc', 'Zn', 30, 'transition metal'],
  ['bromine', 'Br', 35, 'halogen'],
  ['krypton', 'Kr', 36, 'noble gas'],
  ['silver', 'Ag', 47, 'transition metal'],
  ['tin', 'Sn', 50, 'post-transition metal'],
  ['iodine', 'I', 53, 'halogen'],
  ['xenon', 'Xe', 54, 'noble gas'],
  ['platinum', 'Pt', 78, 'transition metal'],
  ['gold', 'Au', 79, 'transition metal'],
  ['mercury', 'Hg', 80, 'transition metal'],
  ['lead', 'Pb', 82, 'post-transition metal'],
  ['radon', 'Rn', 86, 'noble gas'],
  ['uranium', 'U', 92, 'actinide'],
];

const cap = (s) => s[0].toUpperCase() + s.slice(1);
const bare = (country) => country.replace(/^the /, '');
const article = (word) => (/^[aeiou]/i.test(word) ? 'an' : 'a');

const passages = [];
const questions = { single_hop: [], multi_hop: [] };

for (const [country, capital, continent, currency, language] of COUNTRIES) {
  const title = bare(country);
  passages.push({ title, text: `${cap(country)} is a sovereign country in ${continent}. Its capital and seat of government is ${capital}.` });
  passages.push({ title: capital, text: `${capital} is the capital city of ${country}. As the capital, ${capital} hosts the national government of ${country}.` });
  passages.push({
    title: `Economy of ${title}`,
    text: `The official currency of ${country} is the ${currency}.` + (language ? ` The official language of ${country} is ${language}.` : ''),
  });
  questions.single_hop.push({ question: `What is the capital of ${country}?`, answer: [capital] });
  questions.single_hop.push({ question: `What currency is used in ${country}?`, answer: [currency] });
  questions.single_hop.push({ question: `On which continent is ${country}?`, answer: [continent] });
  questions.multi_hop.push({ question: `What currency is used in the country whose capital is ${capital}?`, answer: [currency] });
  if (language) questions.multi_hop.push({ question: `What is the official language of the country whose capital is ${capital}?`, answer: [language] });
}

for (const [element, symbol, z, group] of ELEMENTS) {
  passages.push({ title: cap(element), text: `${cap(element)} is a chemical element with the symbol ${symbol} and atomic number ${z}.` });
  passages.push({ title: `${cap(element)} (chemistry)`, text: `In the periodic table, ${element} is classed as ${article(group)} ${group}. Its nucleus holds ${z} protons.` });
  questions.single_hop.push({ question: `What is the chemical symbol of ${element}?`, answer: [symbol] });
  questions.single_hop.push({ question: `Which element has atomic number ${z}?`, answer: [element] });
  questions.multi_hop.push({ question: `What is the chemical symbol of the element with atomic number ${z}?`, answer: [symbol] });
  questions.multi_hop.push({ question: `In which group of the periodic table is the element with the symbol ${symbol}?`, answer: [group] });
}

const jsonl = (rows) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
const split = { train: [], test: [] };
for (const [source, rows] of Object.entries(questions)) {
  rows.forEach((q, i) => split[i % 4 === 3 ? 'test' : 'train'].push({ ...q, data_source: source }));
}
mkdirSync(OUT, { recursive: true });
writeFileSync(path.join(OUT, 'corpus.jsonl'), jsonl(passages.map((p, i) => ({ id: String(i), ...p }))));
writeFileSync(path.join(OUT, 'train.jsonl'), jsonl(split.train));
writeFileSync(path.join(OUT, 'test.jsonl'), jsonl(split.test));
console.log(`${passages.length} passages, ${split.train.length} train and ${split.test.length} test questions in ${path.relative(process.cwd(), OUT)}`);
