/**
 * The amphora's program: `ostia agent` alone, which the build bundles into dist/ostia-agent.mjs
 * (one file, as an amphora image would ship it). Loading one file instead of hundreds of modules
 * halves the agent's start, which is most of a load balancer's time to ACTIVE.
 */
import { agent } from './agent.js';
import { runCommand } from './run.js';

process.exitCode = await runCommand(agent, process.argv.slice(2));
