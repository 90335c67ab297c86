/** Runs one subcommand and turns any failure into one line on stderr (what failed, then what to do) and an exit code. */
import { CliError, helpText, parseInput, type Command } from './command.js';

export async function runCommand(command: Command, argv: string[]): Promise<number> {
  try {
    const input = parseInput(command, argv);
    if (!input) {
      process.stdout.write(helpText(command));
      return 0;
    }
    return await command.run(input);
  } catch (e) {
    return report(command, e);
  }
}

function report(command: Command, e: unknown): number {
  if (e instanceof CliError) {
    process.stderr.write(`ostia ${command.name}: ${e.message}. ${e.hint}\n`);
    return e.exitCode;
  }
  const message = e instanceof Error ? e.message : String(e);
  process.stderr.write(`ostia ${command.name}: ${message.split('\n')[0]!.replace(/\.$/, '')}. This is a bug or an unforeseen condition: rerun with OSTIA_DEBUG=1 for the stack trace and report it.\n`);
  if (process.env.OSTIA_DEBUG) process.stderr.write(`${e instanceof Error ? e.stack : ''}\n`);
  return 1;
}
