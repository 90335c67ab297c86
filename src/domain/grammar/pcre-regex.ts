/**
 * The regular expressions an L7 rule may hold: the part of the syntax on which JavaScript and
 * PCRE2 agree. HAProxy 2.6 compiles `-m reg` patterns with PCRE2 (8-bit, not in UTF mode); the
 * API must accept only what that compiles, without running HAProxy per request. Outside this
 * subset the two disagree: `\q` is `q` to JavaScript and an error to PCRE2, `[[:foo:]]` an error
 * to PCRE2 alone, `(?<=a+)` a variable-length lookbehind PCRE2 10.42 refuses, `a{1,99999}` past
 * PCRE2's 65535, and a non-ASCII character is one character to JavaScript but several bytes to
 * PCRE2 (a quantifier after it repeats its last byte). So the grammar is:
 *
 *   pattern     := alternative ('|' alternative)*
 *   alternative := (assertion | atom quantifier?)*
 *   assertion   := '^' | '$' | '\b' | '\B' | '(?=' pattern ')' | '(?!' pattern ')'
 *   atom        := '.' | literal | escape | class | '(' pattern ')' | '(?:' pattern ')'
 *   quantifier  := ('*' | '+' | '?' | '{n}' | '{n,}' | '{n,m}') '?'?      n <= m <= 65535
 *   escape      := '\' one of d D w W s S n r t f | '\x' hex hex | '\' ASCII punctuation
 *   class       := '[' '^'? item+ ']'; an item is a character, an escape other than \B, or a
 *                  range of two characters in order; '-' is literal only first or last; '[' escaped
 *   literal     := printable ASCII other than  ^ $ \ . * + ? ( ) [ ] { } |
 *
 * Everything this accepts compiles in both (src/domain/grammar/pcre-regex.test.ts checks
 * JavaScript, `haproxy -c` the PCRE2 side).
 */

const MAX_REPEAT = 65535;
const ESCAPE_CLASSES = 'dDwWsS';
const ESCAPE_CHARS: Readonly<Record<string, string>> = { n: '\n', r: '\r', t: '\t', f: '\f' };
const PUNCTUATION = /^[ -/:-@[-`{-~]$/;
const HEX2 = /^[0-9A-Fa-f]{2}$/;

class RegexProblem extends Error {}

/** A recursive-descent reader over the pattern; each method consumes what it names. */
class Reader {
  private at = 0;
  private depth = 0;
  constructor(private readonly src: string) {}

  private fail(what: string, at = this.at): never {
    throw new RegexProblem(`${what} at position ${at}`);
  }
  private peek(offset = 0): string | undefined {
    return this.src[this.at + offset];
  }
  private eat(s: string): boolean {
    if (!this.src.startsWith(s, this.at)) return false;
    this.at += s.length;
    return true;
  }

  whole(): void {
    this.pattern();
    if (this.at < this.src.length) this.fail(`an unmatched ${this.peek()}`);
  }

  private pattern(): void {
    this.alternative();
    while (this.eat('|')) this.alternative();
  }

  private alternative(): void {
    for (let c = this.peek(); c !== undefined && c !== '|' && c !== ')'; c = this.peek()) {
      if (this.assertion()) continue;
      this.atom();
      this.quantifier();
    }
  }

  private assertion(): boolean {
    if (this.eat('^') || this.eat('$') || this.eat('\\b') || this.eat('\\B')) return true;
    const open = this.at;
    if (this.eat('(?=') || this.eat('(?!')) {
      this.group(open);
      return true;
    }
    return false;
  }

  private group(open: number): void {
    if (++this.depth > 100) this.fail('groups nested deeper than 100');
    this.pattern();
    if (!this.eat(')')) this.fail('an unclosed group', open);
    this.depth--;
  }

  private atom(): void {
    const c = this.peek()!;
    if (c === '(') {
      if (this.src.startsWith('(?', this.at) && !this.src.startsWith('(?:', this.at))
        this.fail('a group other than (…), (?:…), (?=…) or (?!…) (lookbehind and named groups differ between JavaScript and PCRE2)');
      const open = this.at;
      this.eat('(?:') || this.eat('(');
      return this.group(open);
    }
    if (c === '[') return this.charClass();
    if (c === '\\') return void this.escape(false);
    if (c === '.') return void this.at++;
    if ('*+?'.includes(c)) this.fail(`a ${c} with nothing to repeat`);
    if (c === '{' || c === '}' || c === ']') this.fail(`an unescaped ${c} (write \\${c})`);
    this.literal();
  }

  private literal(): string {
    const c = this.peek()!;
    if (c < ' ' || c > '~') this.fail(`the non-ASCII character U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')} (HAProxy matches bytes: write each byte as \\xNN)`);
    this.at++;
    return c;
  }

  /** An escape; returns the one character it stands for, or null for a class (\d …) or an assertion. */
  private escape(inClass: boolean): string | null {
    const start = this.at++;
    const c = this.peek();
    if (c === undefined) this.fail('a \\ ending the pattern', start);
    this.at++;
    if (ESCAPE_CLASSES.includes(c)) return null;
    if (Object.hasOwn(ESCAPE_CHARS, c)) return ESCAPE_CHARS[c]!;
    if (inClass && c === 'b') return '\b';
    if (c === 'x') {
      const hex = this.src.slice(this.at, this.at + 2);
      if (!HEX2.test(hex)) this.fail('a \\x without two hex digits', start);
      this.at += 2;
      return String.fromCharCode(parseInt(hex, 16));
    }
    if (PUNCTUATION.test(c)) return c;
    return this.fail(`the escape \\${c}, which PCRE2 refuses or reads unlike JavaScript,`, start);
  }

  private charClass(): void {
    const open = this.at++;
    this.eat('^');
    if (this.peek() === ']') this.fail('an empty class (write ] inside a class as \\])');
    let first = true;
    while (this.peek() !== ']') {
      if (this.peek() === undefined) this.fail('an unclosed class', open);
      const low = this.classAtom(first);
      first = false;
      if (this.peek() === '-' && this.peek(1) !== ']') {
        const dash = this.at++;
        const high = this.classAtom(false);
        if (low === null || high === null) this.fail('a range with a class escape at one end', dash);
        if (low > high) this.fail(`the range ${low}-${high} out of order`, dash);
      }
    }
    this.at++;
  }

  private classAtom(first: boolean): string | null {
    const c = this.peek()!;
    if (c === '\\') {
      if (this.peek(1) === 'B') this.fail('a \\B inside a class');
      return this.escape(true);
    }
    if (c === '[') this.fail('an unescaped [ inside a class (PCRE2 reads [: as a POSIX class; write \\[)');
    if (c === '-' && !first && this.peek(1) !== ']') this.fail('a - inside a class neither first nor last (write \\-)');
    return this.literal();
  }

  private quantifier(): void {
    const c = this.peek();
    if (c === '*' || c === '+' || c === '?') this.at++;
    else if (c === '{') this.braces();
    else return;
    this.eat('?');
    const next = this.peek();
    if (next !== undefined && '*+?{'.includes(next)) this.fail(`a ${next} after a quantifier`);
  }

  private braces(): void {
    const m = /^\{(\d{1,5})(,(\d{0,5}))?\}/.exec(this.src.slice(this.at));
    if (!m) this.fail('a { that starts no quantifier {n}, {n,} or {n,m} (write \\{)');
    const low = Number(m[1]);
    const high = m[2] === undefined ? low : m[3] === '' ? MAX_REPEAT : Number(m[3]);
    if (high > MAX_REPEAT || low > MAX_REPEAT) this.fail(`a repeat count above ${MAX_REPEAT}`);
    if (low > high) this.fail(`the quantifier {${m[1]},${m[3]}} out of order`);
    this.at += m[0].length;
  }
}

/** Why HAProxy's PCRE2 (or JavaScript) would not compile `value` as this grammar reads it, or null. */
export function regexProblem(value: string): string | null {
  try {
    new Reader(value).whole();
    return null;
  } catch (e) {
    if (e instanceof RegexProblem) return e.message;
    throw e;
  }
}
