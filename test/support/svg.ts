/** The text a picture shows: every <text> element's content, entities decoded, as a reader sees it. */
import { XMLParser } from 'fast-xml-parser';

export function svgTexts(svg: string): string[] {
  const found: string[] = [];
  const walk = (node: unknown, inText: boolean): void => {
    if (typeof node === 'string' || typeof node === 'number') {
      if (inText) found.push(String(node));
      return;
    }
    if (Array.isArray(node)) for (const n of node) walk(n, inText);
    else if (node && typeof node === 'object')
      for (const [key, value] of Object.entries(node)) if (!key.startsWith('@_')) walk(value, inText || key === 'text' || (inText && key === 'tspan'));
  };
  walk(new XMLParser({ ignoreAttributes: true, processEntities: true, htmlEntities: true, parseTagValue: false, trimValues: false }).parse(svg), false);
  return found;
}
