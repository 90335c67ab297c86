/** The benches' command lines: the options every bench has, and checks of values as parseArgs leaves them (strings), a bad one naming its option. */
import { parseArgs, type ParseArgsConfig } from 'node:util';

export function positiveInt(option: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${option} must be a positive integer, got '${value}'`);
  return n;
}

/** A comma-separated list, e.g. `--connections 10,100`. */
export function positiveInts(option: string, list: string): number[] {
  return list.split(',').map((v) => positiveInt(option, v.trim()));
}

export function oneOf<T extends string>(option: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value)) throw new Error(`--${option} must be one of ${allowed.join(', ')}, got '${value}'`);
  return value as T;
}

/** What every bench's command line has besides its own options. */
const COMMON = {
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', default: false },
} as const;

/** parseArgs over a bench's own options plus --json and --help; null when --help was asked for. */
export function benchArgs<const O extends Options>(options: O): BenchValues<O> | null {
  const { values } = parseArgs({ options: { ...COMMON, ...options } });
  return (values as { help?: boolean }).help ? null : (values as BenchValues<O>);
}

type Options = NonNullable<ParseArgsConfig['options']>;
type BenchValues<O extends Options> = ReturnType<typeof parseArgs<{ options: typeof COMMON & O }>>['values'];
