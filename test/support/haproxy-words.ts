/**
 * An independent reading of HAProxy's line parser (configuration.txt §2.2), strict where the
 * real one is lenient: tests decode rendered lines with it to see the words HAProxy will see.
 * It refuses what the renderer must never write — an environment variable (`$` in double
 * quotes), an unterminated quote, an escape other than the ones the encoders emit — and a
 * comment anywhere but at the start of a line.
 */
export class WordsError extends Error {}

const ESCAPED_IN_DOUBLE_QUOTES = new Set(['\\', '"', '$']);

export function splitWords(line: string): string[] {
  const words: string[] = [];
  let current: string | null = null;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote === "'") {
      if (c === "'") quote = null;
      else current += c;
    } else if (quote === '"') {
      if (c === '"') quote = null;
      else if (c === '$') throw new WordsError(`environment variable in ${JSON.stringify(line)}`);
      else if (c === '\\') {
        const next = line[++i];
        if (next === undefined || !ESCAPED_IN_DOUBLE_QUOTES.has(next)) throw new WordsError(`unexpected escape in ${JSON.stringify(line)}`);
        current += next;
      } else current += c;
    } else if (c === ' ' || c === '\t') {
      if (current !== null) words.push(current);
      current = null;
    } else if (c === '#') {
      throw new WordsError(`comment inside ${JSON.stringify(line)}`);
    } else if (c === '"' || c === "'" || c === '\\') {
      if (c === '\\') throw new WordsError(`escape outside quotes in ${JSON.stringify(line)}`);
      quote = c;
      current ??= '';
    } else {
      current = (current ?? '') + c;
    }
  }
  if (quote !== null) throw new WordsError(`unterminated quote in ${JSON.stringify(line)}`);
  if (current !== null) words.push(current);
  return words;
}

/** The lines of a rendered file that HAProxy parses: comments and blank lines dropped. */
export function directiveLines(cfg: string): string[] {
  return cfg.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#'));
}

/** Each parsed line as its words. */
export function parseConfig(cfg: string): string[][] {
  return directiveLines(cfg).map(splitWords);
}

/**
 * The arguments inside `fetch(…)` as HAProxy's second-level parser reads them: backslash
 * escapes the next character, single and double quotes group.
 */
export function fetchArgument(wordText: string): { fetch: string; argument: string } {
  const m = /^([a-z_.]+)\((.*)\)$/s.exec(wordText);
  if (!m) throw new WordsError(`not a fetch with an argument: ${JSON.stringify(wordText)}`);
  let argument = '';
  const raw = m[2]!;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c === '\\') argument += raw[++i] ?? '';
    else if (c === "'" || c === '"' || c === ',' || c === ')' || c === '(') throw new WordsError(`unescaped ${c} in ${JSON.stringify(wordText)}`);
    else argument += c;
  }
  return { fetch: m[1]!, argument };
}
