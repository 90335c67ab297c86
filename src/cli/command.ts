/**
 * The shape every `ostia` subcommand shares: declared options (so `--help` is generated from
 * the same table the parser uses), `--help` and `--json` on all of them, and failures that
 * carry both what went wrong and what to do about it.
 */
import { parseArgs } from 'node:util';
import { printable } from './terminal-text.js';

export interface Option {
  type: 'string' | 'boolean';
  short?: string;
  /** Placeholder shown in help, e.g. DIR. */
  value?: string;
  help: string;
}

export interface Input {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
  json: boolean;
}

export interface Command {
  name: string;
  summary: string;
  /** Positional arguments, e.g. ['lb-id']; each is required. */
  positionals?: string[];
  /** Any number of arguments after the positionals (after `--` when they start with a dash), e.g. 'COMMAND'. */
  rest?: string;
  options: Record<string, Option>;
  /** Paragraphs printed after the options in `--help`. */
  details?: string;
  /** Resolves to the process exit code. */
  run(input: Input): Promise<number>;
}

/** A command of commands (`ostia server create`): each member's name starts with the group's. */
export interface CommandGroup {
  name: string;
  summary: string;
  commands: readonly Command[];
}

/** A failure the user can act on: printed as one line, `<what failed>. <what to do>`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly hint: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/** Wrong flags or arguments: exit 2, like other Unix tools. */
export function usageError(command: Command, message: string): CliError {
  return new CliError(message, `See 'ostia ${command.name} --help'.`, 2);
}

const commonOptions: Record<string, Option> = {
  json: { type: 'boolean', help: 'print machine-readable JSON on stdout' },
  help: { type: 'boolean', short: 'h', help: 'show this help and exit' },
};

export function allOptions(command: Command): Record<string, Option> {
  return { ...command.options, ...commonOptions };
}

/** Parses argv for a command; `null` means `--help` was asked for. */
export function parseInput(command: Command, argv: string[]): Input | null {
  let parsed;
  try {
    const options = Object.fromEntries(Object.entries(allOptions(command)).map(([name, o]) => [name, { type: o.type, ...(o.short && { short: o.short }) }]));
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (e) {
    // parseArgs explains itself in its first sentence; the rest is about `--` quoting.
    throw usageError(command, lowerFirst((e as Error).message.split('. ')[0]!.replace(/\.$/, '')));
  }
  if (parsed.values.help) return null;
  const expected = command.positionals ?? [];
  if (command.rest ? parsed.positionals.length < expected.length : parsed.positionals.length !== expected.length) {
    const wanted = expected.length ? expected.map((p) => `<${p}>`).join(' ') : 'no arguments';
    throw usageError(command, `expected ${wanted}, got ${parsed.positionals.length ? parsed.positionals.map((p) => `'${p}'`).join(' ') : 'none'}`);
  }
  return { values: parsed.values, positionals: parsed.positionals, json: parsed.values.json === true };
}

export function helpText(command: Command): string {
  const options = Object.entries(allOptions(command));
  const label = ([name, o]: [string, Option]) => `${o.short ? `-${o.short}, ` : ''}--${name}${o.value ? ` ${o.value}` : ''}`;
  const width = Math.max(...options.map((entry) => label(entry).length));
  const args = (command.positionals ?? []).map((p) => ` <${p}>`).join('');
  const lines = [
    `Usage: ostia ${command.name}${args} [options]${command.rest ? ` [-- ${command.rest}...]` : ''}`,
    '',
    command.summary,
    '',
    'Options:',
    ...options.map((entry) => `  ${label(entry).padEnd(width)}  ${entry[1].help}`),
  ];
  if (command.details) lines.push('', command.details);
  return lines.join('\n') + '\n';
}

/** The group's commands, as the overview lists all commands. */
export function groupHelpText(group: CommandGroup): string {
  const width = Math.max(...group.commands.map((c) => c.name.length));
  return [
    `Usage: ostia ${group.name} <command> [options]`,
    '',
    group.summary,
    '',
    'Commands:',
    ...group.commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    `Run 'ostia ${group.name} <command> --help' for a command's options.`,
    '',
  ].join('\n');
}

/**
 * JSON on stdout, the same value however it is parsed; JSON.stringify escapes C0 controls but
 * leaves DEL, C1 controls, U+2028/2029 and bidi controls raw, so these are spelled as \uXXXX too.
 */
export function printJson(value: unknown): void {
  process.stdout.write(printable(JSON.stringify(value)) + '\n');
}

/** One line of text for a person, with any control characters in it (values users gave) spelled out. */
export function writeLine(stream: NodeJS.WritableStream, text: string): void {
  stream.write(`${printable(text)}\n`);
}

/**
 * Rows (the first is the heading) as aligned columns, two spaces apart; the `rightAligned` columns hold numbers.
 * Cells hold values users gave, so their control characters are spelled out (and counted as spelled).
 */
export function formatTable(cells: readonly string[][], rightAligned: readonly number[] = []): string {
  const rows = cells.map((r) => r.map(printable));
  const widths = rows[0]!.map((_, col) => Math.max(...rows.map((r) => r[col]!.length)));
  return rows.map((r) => r.map((cell, col) => (rightAligned.includes(col) ? cell.padStart(widths[col]!) : cell.padEnd(widths[col]!))).join('  ').trimEnd()).join('\n') + '\n';
}

function lowerFirst(text: string): string {
  return text.charAt(0).toLowerCase() + text.slice(1);
}
