// Every IFEval instruction checker on a response that follows it and one that does not, with the
// original's edge cases; the loose variants; the four IFEval accuracies; the language detector.
import { describe, expect, it } from 'vitest';
import { CHECKERS, followsLoose, followsStrict } from '../../../src/cookbook/eval/ifeval/checkers.js';
import { detectLanguage } from '../../../src/cookbook/eval/ifeval/language.js';
import { countSentences, countWords } from '../../../src/cookbook/eval/ifeval/text.js';
import { SUITES, type Grade } from '../../../src/cookbook/eval/suites/index.js';

type Case = [id: string, kwargs: Record<string, unknown>, follows: string, fails: string];

const CASES: Case[] = [
  ['keywords:existence', { keywords: ['bench', 'Fountain'] }, 'A BENCH by the fountain.', 'A bench by the pond.'],
  ['keywords:frequency', { keyword: 'blue', frequency: 2, relation: 'at least' }, 'Blue sky, blue sea.', 'Blue sky.'],
  ['keywords:forbidden_words', { forbidden_words: ['sad'] }, 'Saddle up, I am happy.', 'I am Sad.'],
  ['keywords:letter_frequency', { letter: 'z', let_frequency: 3, let_relation: 'less than' }, 'Zoo zone.', 'Zoo zone zebra.'],
  ['language:response_language', { language: 'de' }, 'Ich habe eine Katze und sie ist nicht sehr alt.', 'I have a cat and it is not very old.'],
  ['length_constraints:number_sentences', { num_sentences: 3, relation: 'less than' }, 'Dr. Smith came. He left.', 'One. Two. Three.'],
  ['length_constraints:number_paragraphs', { num_paragraphs: 2 }, 'First part.\n***\nSecond part.', 'First.\n***\n\n***\nSecond.'],
  ['length_constraints:number_words', { num_words: 5, relation: 'at least' }, "It's a fine day, isn't it", 'Too short here'],
  ['length_constraints:nth_paragraph_first_word', { num_paragraphs: 2, nth_paragraph: 2, first_word: 'then' }, 'Intro.\n\n"Then, we go.', 'Intro.\n\nNext we go.'],
  ['detectable_content:number_placeholders', { num_placeholders: 2 }, 'Dear [name], at [address].', 'Dear [name].'],
  ['detectable_content:postscript', { postscript_marker: 'P.S.' }, 'Hello.\n\np.s. see you', 'Hello. PS see you'],
  ['detectable_content:postscript', { postscript_marker: 'P.P.S' }, 'Hi.\nP.P.S. more', 'Hi.\nP.S. more'],
  ['detectable_format:number_bullet_lists', { num_bullets: 2 }, '* one\n- two', '* one\n* two\n* three'],
  ['detectable_format:constrained_response', {}, 'My answer is maybe.', 'Maybe.'],
  ['detectable_format:number_highlighted_sections', { num_highlights: 2 }, '*one* and **two**', '*one* and ** **'],
  ['detectable_format:multiple_sections', { section_spliter: 'Section', num_sections: 2 }, 'Section 1\nA\nSection 2\nB', 'Section 1\nA'],
  ['detectable_format:json_format', {}, '```json\n{"a": 1}\n```', '{"a": 1'],
  ['detectable_format:title', {}, '<<A Poem>>\ntext', '<< >> text'],
  ['combination:two_responses', {}, 'First answer.\n******\nSecond answer.', 'Same.\n******\nSame.'],
  ['combination:repeat_prompt', { prompt_to_repeat: 'Name a cat.' }, 'name a cat. Tom.', 'Tom. Name a cat.'],
  ['startend:end_checker', { end_phrase: 'Any other questions?' }, 'Done. any other questions?"', 'Any other questions? Done.'],
  ['startend:quotation', {}, ' "quoted" ', '"not closed'],
  ['change_case:capital_word_frequency', { capital_frequency: 2, capital_relation: 'at least' }, 'NASA and the USA', 'NASA and Nasa'],
  ['change_case:english_capital', {}, 'THE SKY IS BLUE.', 'The sky is BLUE.'],
  ['change_case:english_lowercase', {}, 'the sea is calm.', 'the Sea is calm.'],
  ['punctuation:no_comma', {}, 'No commas here.', 'One, two.'],
];

describe('IFEval checkers', () => {
  it('cover all 25 instruction types of google/IFEval', () => {
    expect(Object.keys(CHECKERS)).toHaveLength(25);
    expect(new Set(CASES.map(([id]) => id))).toEqual(new Set(Object.keys(CHECKERS)));
  });

  for (const [id, kwargs, follows, fails] of CASES) {
    it(`${id}: ${JSON.stringify(kwargs)}`, () => {
      expect(followsStrict(id, follows, kwargs)).toBe(true);
      expect(followsStrict(id, fails, kwargs)).toBe(false);
    });
  }

  it('an empty response follows nothing, even "no comma"', () => {
    expect(followsStrict('punctuation:no_comma', '  ', {})).toBe(false);
    expect(followsLoose('punctuation:no_comma', '  ', {})).toBe(false);
  });

  it('english_capital/lowercase also need English', () => {
    expect(followsStrict('change_case:english_lowercase', 'ich habe eine katze und sie ist nicht alt.', {})).toBe(false);
  });
});

describe('loose accuracy (first/last line removed, asterisks removed)', () => {
  it('a chatty first line or markdown emphasis fails strict but passes loose', () => {
    const json = 'Sure, here it is:\n{"a": 1}';
    expect(followsStrict('detectable_format:json_format', json, {})).toBe(false);
    expect(followsLoose('detectable_format:json_format', json, {})).toBe(true);
    const ending = '**Is there anything else I can help with?**';
    expect(followsStrict('startend:end_checker', ending, { end_phrase: 'Is there anything else I can help with?' })).toBe(false);
    expect(followsLoose('startend:end_checker', ending, { end_phrase: 'Is there anything else I can help with?' })).toBe(true);
  });
  it('loose never passes what no variant follows', () => {
    expect(followsLoose('punctuation:no_comma', 'a, b\nc, d\ne, f', {})).toBe(false);
  });
});

describe('IFEval aggregate', () => {
  it('prompt- and instruction-level strict and loose accuracies', () => {
    const suite = SUITES.ifeval;
    const row = { key: 7, prompt: 'P', instruction_id_list: ['punctuation:no_comma', 'detectable_format:json_format'], kwargs: [{}, { keywords: null }] };
    const item = suite.parseRow(row, 'f:1', null);
    const graded = ['{"a": 1}', 'Here:\n{"a": 1}', 'a, b'].map((response) => {
      const g = suite.grade(response, item) as Grade;
      return { index: 0, id: item.id, prompt: '', response, expected: '', extracted: g.extracted, correct: g.correct, metrics: g.metrics };
    });
    expect(graded.map((g) => g.correct)).toEqual([true, false, false]);
    expect(suite.aggregate!(graded)).toEqual({
      prompt_level_strict_acc: 1 / 3,
      prompt_level_loose_acc: 2 / 3,
      inst_level_strict_acc: 3 / 6,
      inst_level_loose_acc: 4 / 6,
    });
  });
});

describe('text measures and language', () => {
  it('sentences as IFEval splits them (titles, decimals, ellipses)', () => {
    expect(countSentences('Mr. Smith paid 3.5 dollars. Then he left!')).toBe(2);
    expect(countSentences('Wait... what? Yes.')).toBe(3);
    expect(countWords("don't stop-now")).toBe(4);
  });
  it('detects the languages IFEval asks for', () => {
    const samples: Record<string, string> = {
      en: 'The cat is on the mat and it is happy.',
      de: 'Die Katze ist auf der Matte und sie ist nicht traurig.',
      fr: 'Le chat est sur le tapis et il est très content.',
      es: 'El gato está en la alfombra y es muy feliz con los niños.',
      it: 'Il gatto è sul tappeto e non è triste per niente.',
      pt: 'O gato está no tapete e não é muito triste, mas você sabe.',
      fi: 'Kissa on matolla ja se on iloinen, mutta ei nälkäinen.',
      sw: 'Paka yuko kwenye mkeka na ni mwenye furaha sana kwa watu.',
      vi: 'Con mèo đang ở trên thảm và nó rất vui vẻ.',
      ru: 'Кошка сидит на ковре и она очень счастлива.',
      uk: 'Кішка сидить на килимі і вона дуже щаслива.',
      bg: 'Котката седи на килима и тя е много щастлива, защото ъгълът е топъл.',
      ar: 'القطة تجلس على السجادة وهي سعيدة جدا.',
      fa: 'گربه روی فرش نشسته و خیلی خوشحال است.',
      ur: 'بلی قالین پر بیٹھی ہے اور بہت خوش ہے۔',
      hi: 'बिल्ली चटाई पर बैठी है और बहुत खुश है।',
      mr: 'मांजर चटईवर बसली आहे आणि ती खूप आनंदी आहे.',
      bn: 'বিড়ালটি মাদুরের উপর বসে আছে।',
      ko: '고양이가 매트 위에 앉아 있습니다.',
      ja: '猫はマットの上に座っています。',
      zh: '猫坐在垫子上，很开心。',
      th: 'แมวนั่งอยู่บนเสื่อ',
      ta: 'பூனை பாயில் அமர்ந்திருக்கிறது.',
      te: 'పిల్లి చాప మీద కూర్చుంది.',
      gu: 'બિલાડી સાદડી પર બેઠી છે.',
      kn: 'ಬೆಕ್ಕು ಚಾಪೆಯ ಮೇಲೆ ಕುಳಿತಿದೆ.',
      pa: 'ਬਿੱਲੀ ਚਟਾਈ ਉੱਤੇ ਬੈਠੀ ਹੈ।',
    };
    for (const [lang, text] of Object.entries(samples)) expect([lang, detectLanguage(text)]).toEqual([lang, lang]);
    expect(detectLanguage('12345 !!!')).toBeNull();
  });
});
