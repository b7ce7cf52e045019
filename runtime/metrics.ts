// Prometheus metrics at GET /metrics (operator token): tool calls by outcome, credits kept, HTTP latency,
// password checks, e-mail sent, retried and given up, and the process defaults. Counting costs a few microseconds per request; collection happens on scrape.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export class Metrics {
  readonly registry = new Registry();
  private readonly calls = new Counter({
    name: 'tool_server_tool_calls_total',
    help: 'tools/call requests by tool name and outcome (ok, or the error code)',
    labelNames: ['tool', 'outcome'] as const,
    registers: [this.registry],
  });
  private readonly credits = new Counter({ name: 'tool_server_credits_kept_total', help: 'Credits charged and kept', registers: [this.registry] });
  private readonly requests = new Histogram({
    name: 'tool_server_http_request_duration_seconds',
    help: 'HTTP requests by area (mcp, api, other) and status class',
    labelNames: ['area', 'status'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  private readonly mail = new Counter({
    name: 'tool_server_mail_total',
    help: 'E-mail by kind (verify_address, password_reset, alert_*) and result: sent, failed_attempt (tried again later), given_up (never delivered)',
    labelNames: ['kind', 'result'] as const,
    registers: [this.registry],
  });

  /** `passwordChecks`: how many passwords were checked so far (access/passwords.ts), read at each scrape. */
  constructor(passwordChecks: () => number = () => 0) {
    new Counter({
      name: 'tool_server_password_checks_total',
      help: 'Passwords checked against a stored hash (sign-ins, password changes): each is a scrypt of 32 MiB',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(passwordChecks());
      },
    });
    collectDefaultMetrics({ register: this.registry, prefix: 'tool_server_' });
  }

  toolCall(tool: string, outcome: string, creditsKept: number): void {
    this.calls.inc({ tool, outcome });
    if (creditsKept) this.credits.inc(creditsKept);
  }

  /** Counts what became of an e-mail attempt (mail/outbox.ts). */
  mailResult(kind: string, result: 'sent' | 'failed_attempt' | 'given_up'): void {
    this.mail.inc({ kind, result });
  }

  /** Reports the outbox's length at each scrape (only when e-mail is on). */
  watchMailQueue(queued: () => Promise<number>): void {
    new Gauge({
      name: 'tool_server_mail_queued',
      help: 'E-mails waiting to be sent (new, or waiting for their next attempt)',
      registers: [this.registry],
      async collect() {
        this.set(await queued());
      },
    });
  }

  request(path: string, status: number, seconds: number): void {
    const area = path.startsWith('/mcp/') ? 'mcp' : path.startsWith('/api/') ? 'api' : 'other';
    this.requests.observe({ area, status: `${Math.floor(status / 100)}xx` }, seconds);
  }
}
