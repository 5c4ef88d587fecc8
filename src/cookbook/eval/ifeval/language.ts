// Response language for IFEval's `language:response_language` and its English-only case checks.
// IFEval calls langdetect (a Python package); this is a smaller detector that covers the languages
// IFEval asks for: the writing system decides most of them, distinctive letters split the scripts
// several languages share, and common function words pick among Latin-script languages.
// It answers null when the text gives it nothing to go on.

const SCRIPTS: Array<[RegExp, string]> = [
  [/\p{Script=Hangul}/u, 'ko'],
  [/[\p{Script=Hiragana}\p{Script=Katakana}]/u, 'ja'],
  [/\p{Script=Han}/u, 'zh'],
  [/\p{Script=Thai}/u, 'th'],
  [/\p{Script=Bengali}/u, 'bn'],
  [/\p{Script=Gurmukhi}/u, 'pa'],
  [/\p{Script=Gujarati}/u, 'gu'],
  [/\p{Script=Tamil}/u, 'ta'],
  [/\p{Script=Telugu}/u, 'te'],
  [/\p{Script=Kannada}/u, 'kn'],
  [/\p{Script=Malayalam}/u, 'ml'],
  [/\p{Script=Greek}/u, 'el'],
  [/\p{Script=Hebrew}/u, 'he'],
  [/\p{Script=Devanagari}/u, 'hi'],
  [/\p{Script=Arabic}/u, 'ar'],
  [/\p{Script=Cyrillic}/u, 'ru'],
];

const LATIN_WORDS: Record<string, string[]> = {
  en: ['the', 'and', 'is', 'of', 'to', 'in', 'that', 'it', 'you', 'with', 'for', 'this', 'are', 'was', 'be', 'on', 'not', 'have', 'i', 'a'],
  de: ['der', 'die', 'das', 'und', 'ist', 'nicht', 'ich', 'sie', 'es', 'ein', 'eine', 'zu', 'mit', 'den', 'auf', 'auch', 'sich', 'wir'],
  fr: ['le', 'la', 'les', 'et', 'est', 'des', 'une', 'un', 'je', 'vous', 'nous', 'pas', 'que', 'qui', 'dans', 'pour', 'sur', 'avec', 'du'],
  es: ['el', 'la', 'los', 'las', 'y', 'es', 'que', 'de', 'en', 'un', 'una', 'por', 'con', 'para', 'no', 'se', 'del', 'muy', 'pero'],
  it: ['il', 'lo', 'la', 'gli', 'le', 'e', 'è', 'che', 'di', 'un', 'una', 'per', 'non', 'sono', 'con', 'del', 'della', 'anche', 'ma'],
  pt: ['o', 'a', 'os', 'as', 'e', 'é', 'que', 'de', 'um', 'uma', 'não', 'para', 'com', 'do', 'da', 'em', 'muito', 'mas', 'você'],
  nl: ['de', 'het', 'een', 'en', 'is', 'niet', 'van', 'ik', 'je', 'dat', 'met', 'op', 'voor', 'zijn', 'maar', 'ook'],
  fi: ['ja', 'on', 'ei', 'se', 'että', 'olen', 'hän', 'mutta', 'kun', 'myös', 'ovat', 'oli', 'tämä', 'joka', 'minä', 'sinä'],
  sw: ['na', 'ya', 'wa', 'kwa', 'ni', 'katika', 'za', 'la', 'kuwa', 'hii', 'au', 'lakini', 'sana', 'yake', 'pia', 'watu'],
  vi: ['và', 'là', 'của', 'có', 'không', 'những', 'các', 'một', 'được', 'cho', 'người', 'trong', 'này', 'với', 'đã', 'để'],
  id: ['dan', 'yang', 'di', 'ini', 'itu', 'dengan', 'untuk', 'tidak', 'dari', 'dalam', 'akan', 'ada', 'saya', 'kami'],
  tr: ['ve', 'bir', 'bu', 'da', 'de', 'için', 'ile', 'çok', 'ama', 'olarak', 'gibi', 'daha', 'var', 'ben', 'sen'],
  pl: ['i', 'w', 'nie', 'na', 'się', 'jest', 'że', 'z', 'do', 'to', 'jak', 'ale', 'co', 'tak', 'już'],
};

function byScript(text: string): string | null {
  const letters = [...text].filter((c) => /\p{L}/u.test(c));
  if (letters.length === 0) return null;
  let best: [string, number] | null = null;
  for (const [re, lang] of SCRIPTS) {
    const n = letters.filter((c) => re.test(c)).length;
    if (n > 0 && (!best || n > best[1])) best = [lang, n];
  }
  const latin = letters.filter((c) => /\p{Script=Latin}/u.test(c)).length;
  if (!best || latin > best[1]) return latin > 0 ? 'latin' : null;
  // Japanese text mixes kana with Han: any kana makes it Japanese.
  if (best[0] === 'zh' && /[\p{Script=Hiragana}\p{Script=Katakana}]/u.test(text)) return 'ja';
  return best[0];
}

/** Languages sharing a script, told apart by their own letters and words. */
function refine(script: string, text: string): string {
  if (script === 'ru') {
    if (/[іїєґ]/iu.test(text)) return 'uk';
    if (!/[ыэё]/iu.test(text) && /ъ/iu.test(text)) return 'bg';
    return 'ru';
  }
  if (script === 'ar') {
    if (/[ٹڈڑںےہ]/u.test(text)) return 'ur';
    if (/[پچژگکی]/u.test(text)) return 'fa';
    return 'ar';
  }
  if (script === 'hi') {
    if (/(आहे|आणि|नाही|आहेत)/u.test(text)) return 'mr';
    if (/(छ|हुन्छ|गर्न|भएको|पनि)/u.test(text)) return 'ne';
    return 'hi';
  }
  return script;
}

function byWords(text: string): string | null {
  const tokens = text.toLowerCase().match(/[\p{L}\p{M}]+/gu) ?? [];
  let best: [string, number] | null = null;
  for (const [lang, list] of Object.entries(LATIN_WORDS)) {
    const set = new Set(list);
    const n = tokens.filter((t) => set.has(t)).length;
    if (n > 0 && (!best || n > best[1])) best = [lang, n];
  }
  if (/[ơưđ]|[ạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ]/iu.test(text)) return 'vi';
  return best ? best[0] : null;
}

/** ISO 639-1 code of the text's language (zh for Chinese), or null when it cannot tell. */
export function detectLanguage(text: string): string | null {
  const script = byScript(text);
  if (script === null) return null;
  return script === 'latin' ? byWords(text) : refine(script, text);
}
