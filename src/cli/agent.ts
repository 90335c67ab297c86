/**
 * `ostia agent --dir DIR`: the program an amphora runs (the `local` compute driver starts it
 * detached, one per amphora directory). Logs go to stderr; stdout carries one announcement.
 */
import { close, write } from 'node:fs';
import { CliError, printJson, usageError, type Command } from './command.js';
import { stopSignal } from './signals.js';

export const agent: Command = {
  name: 'agent',
  summary: "Run an amphora's agent: its HAProxy, the mutual-TLS management API and heartbeats (started by the compute driver).",
  options: {
    dir: { type: 'string', value: 'DIR', help: "the amphora's directory, holding agent.json (written by the compute driver)" },
    'ready-fd': { type: 'string', value: 'FD', help: 'once listening, write the announcement line to this inherited file descriptor and close it' },
  },
  details:
    'Re-applies the configuration the previous agent of DIR applied, then listens on the management address and port of agent.json. ' +
    'SIGTERM or SIGINT stops HAProxy (connections finish first) and exits.',
  async run(input) {
    const dir = input.values.dir;
    if (typeof dir !== 'string' || dir === '') throw usageError(agent, '--dir is required');
    const readyFd = input.values['ready-fd'] === undefined ? undefined : Number(input.values['ready-fd']);
    if (readyFd !== undefined && !(Number.isInteger(readyFd) && readyFd > 2)) throw usageError(agent, `--ready-fd must be a file descriptor above 2, got '${input.values['ready-fd']}'`);
    const stopped = stopSignal();
    // Loaded here, not at the top: `--help` should not wait for Fastify.
    const [{ default: pino }, { BootConfigError, startAgent }] = await Promise.all([import('pino'), import('../amphora-agent/main.js')]);
    const log = pino({ level: process.env.OSTIA_LOG_LEVEL ?? 'info' }, pino.destination({ dest: 2, sync: true }));
    let running;
    try {
      running = await startAgent(dir, log);
    } catch (e) {
      if (e instanceof BootConfigError) throw new CliError(e.message, 'The compute driver writes agent.json when it boots the amphora: boot it again, or fix the file.');
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EADDRINUSE' || code === 'EADDRNOTAVAIL') throw new CliError(`cannot listen on the management address: ${(e as Error).message}`, 'Check managementAddress and agentPort in agent.json.');
      throw e;
    }
    const announcement = { url: running.url, pid: process.pid };
    if (input.json) printJson(announcement);
    else process.stdout.write(`Amphora agent listening on ${running.url} (pid ${process.pid}). Stop with SIGTERM.\n`);
    // Whoever booted us may be gone (the amphora outlives its controller): a failed write is no error.
    if (readyFd !== undefined) write(readyFd, JSON.stringify(announcement) + '\n', () => close(readyFd, () => undefined));
    const signal = await stopped;
    log.info({ signal }, 'stopping the amphora agent');
    await running.stop();
    return 0;
  },
};
