// `npm run soak`: 100,000 tools/call through the full pipeline on loopback (32 connections, in steps of
// 10,000), sampling the service's resident memory and V8 heap (from its /metrics) after each step, a full
// garbage collection and a short pause. Writes the figures to docs/soak.md. SOAK_CALLS and SOAK_STORE (memory | file) change the run.
import { writeFile } from 'node:fs/promises';
import autocannon from 'autocannon';
import { children, launch, runBench } from './processes.ts';

const TOTAL = Number(process.env.SOAK_CALLS || 100_000);
const STEP = 10_000;
const STORE = process.env.SOAK_STORE === 'file' ? 'file' : 'memory';
const BODY = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'demo_ping', arguments: {} } });

interface Sample {
  calls: number;
  rssMb: number;
  heapMb: number;
  errors: number;
}

async function memory(metricsUrl: string, operator: string): Promise<{ rssMb: number; heapMb: number }> {
  const text = await (await fetch(metricsUrl, { headers: { authorization: `Bearer ${operator}` } })).text();
  const read = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? NaN) / 1024 / 1024;
  return { rssMb: read('tool_server_process_resident_memory_bytes'), heapMb: read('tool_server_nodejs_heap_size_used_bytes') };
}

async function main(): Promise<void> {
  const upstream = (await launch('upstream.ts')).url;
  const ours = await launch('ours.ts', [upstream], { BENCH_STORE: STORE, BENCH_NODE_FLAGS: '--expose-gc' });
  const pid = children.at(-1)!.pid!;
  const samples: Sample[] = [];
  let done = 0;
  const started = Date.now();
  while (done < TOTAL) {
    const result = await autocannon({
      url: ours.url,
      connections: 32,
      amount: STEP,
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${ours.key}` },
      body: BODY,
    });
    done += STEP;
    // A full garbage collection first, then the sample: live memory, not what the collector has not freed yet.
    process.kill(pid, 'SIGUSR2');
    await new Promise((r) => setTimeout(r, 1000));
    samples.push({ calls: done, ...(await memory(ours.metrics, ours.operator)), errors: result.errors + result.non2xx + result.timeouts });
    console.log(`${done} calls: rss ${samples.at(-1)!.rssMb.toFixed(1)} MB, heap ${samples.at(-1)!.heapMb.toFixed(1)} MB, errors ${samples.at(-1)!.errors}`);
  }
  const seconds = (Date.now() - started) / 1000;
  const first = samples[0];
  const last = samples.at(-1)!;
  // The ledger keeps up to LEDGER_MAX_RECORDS (10,000) records in memory on the embedded store: memory
  // grows until it is full, so the middle sample shows whether anything grows after that.
  const middle = samples[Math.floor(samples.length / 2) - 1] ?? first;
  const ratio = `rss ${last.calls}/${first.calls} calls ${(last.rssMb / first.rssMb).toFixed(2)}, ${last.calls}/${middle.calls} calls ${(last.rssMb / middle.rssMb).toFixed(2)}`;
  const heapRatio = `heap ${last.calls}/${first.calls} calls ${(last.heapMb / first.heapMb).toFixed(2)}, ${last.calls}/${middle.calls} calls ${(last.heapMb / middle.heapMb).toFixed(2)}`;
  console.log(ratio);
  console.log(heapRatio);
  const table = samples.map((s) => `| ${s.calls.toLocaleString('en-US')} | ${s.rssMb.toFixed(1)} | ${s.heapMb.toFixed(1)} | ${s.errors} |`).join('\n');
  await writeFile(
    'docs/soak.md',
    `# Soak figures

\`npm run soak\`: ${TOTAL.toLocaleString('en-US')} tools/call through the full pipeline (key authentication, rate limits, credit
charge on the owner's credit line, the spec's request through the guarded client, the ledger record) on loopback,
32 connections, store: ${STORE}. Memory of the service process from its \`/metrics\` after each step of
${STEP.toLocaleString('en-US')} calls, a full garbage collection and a 1 s pause. ${seconds.toFixed(0)} s in all, on a 2-core machine.

| calls | RSS MB | V8 heap used MB | errors |
|---|---|---|---|
${table}

\`${ratio}\`, \`${heapRatio}\`.
`,
  );
}

runBench(main);
