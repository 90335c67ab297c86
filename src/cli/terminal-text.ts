/**
 * Text from users (names, descriptions, reasons, certificate fields, arguments) as an operator's
 * terminal may show it: a tenant's load-balancer name must not move the cursor, clear the screen,
 * set the window title, start a new line or reverse the text around it. Every control character
 * is shown as the escape JSON would give it, so what is seen is what is stored.
 */

/**
 * C0 controls, DEL, C1 controls (a terminal acts on 8-bit CSI/OSC too), the line and paragraph
 * separators, and the bidi controls that reorder what follows them ("Trojan Source": marks,
 * embeddings, overrides and isolates).
 */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

const SHORT: Readonly<Record<string, string>> = { '\b': '\\b', '\t': '\\t', '\n': '\\n', '\f': '\\f', '\r': '\\r' };

/** `text` with every control character spelled out (`\n`, `\u001b`, `\u202e`); text without any is returned unchanged. */
export function printable(text: string): string {
  return text.replace(CONTROL, (c) => SHORT[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
