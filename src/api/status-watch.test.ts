import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Doorbell, StatusWatch } from './status-watch.js';
import type { StatusFeed, StatusListener } from '../db/status-feed.js';

const never = new AbortController().signal;

test('a ring while the reader reads is not slept through', async () => {
  const bell = new Doorbell();
  bell.ring();
  const t0 = Date.now();
  assert.equal(await bell.next(10_000, never), true);
  assert.ok(Date.now() - t0 < 5_000);
});

test('next says whether it rang, or ended by time or abort', async () => {
  const bell = new Doorbell();
  assert.equal(await bell.next(10, never), false);
  const later = bell.next(10_000, never);
  bell.ring();
  assert.equal(await later, true);
  const abort = new AbortController();
  const aborted = bell.next(10_000, abort.signal);
  abort.abort();
  assert.equal(await aborted, false);
});

function fakeFeed(): StatusFeed & { listener(): StatusListener } {
  let l: StatusListener | undefined;
  return {
    async watch(listener) {
      l = listener;
      return () => (l = undefined);
    },
    async close() {},
    listener: () => l!,
  };
}

test('a change wakes the watchers of its load balancer, of its project and of every project, and no others', async () => {
  const feed = fakeFeed();
  const watch = new StatusWatch(feed);
  const woken: string[] = [];
  const stops = [
    await watch.loadBalancer('lb1', (lb) => woken.push(`lb1:${lb}`)),
    await watch.loadBalancer('lb2', (lb) => woken.push(`lb2:${lb}`)),
    await watch.project('p1', (lb) => woken.push(`p1:${lb}`)),
    await watch.project('p2', (lb) => woken.push(`p2:${lb}`)),
    await watch.project(null, (lb) => woken.push(`all:${lb}`)),
  ];
  feed.listener().changed('lb1', 'p1');
  assert.deepEqual(woken.sort(), ['all:lb1', 'lb1:lb1', 'p1:lb1']);
  woken.length = 0;
  feed.listener().resync();
  assert.deepEqual(woken.sort(), ['all:null', 'lb1:null', 'lb2:null', 'p1:null', 'p2:null']);
  assert.equal(watch.watchers, 5);
  for (const stop of stops) stop();
  assert.equal(watch.watchers, 0);
});
