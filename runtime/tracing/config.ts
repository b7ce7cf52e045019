// The OTEL_* variables the service honours, validated with the rest of the configuration (runtime/config.ts).
// Tracing is on only when an OTLP endpoint is set; without one the other variables are not even read.

export type SamplerName = 'always_on' | 'always_off' | 'traceidratio' | 'parentbased_always_on' | 'parentbased_always_off' | 'parentbased_traceidratio';

export interface TracingConfig {
  /** Where spans are POSTed as OTLP/HTTP JSON (the traces endpoint itself, e.g. http://collector:4318/v1/traces). */
  url: string;
  /** Extra headers of every export (a collector's credentials): secrets, never logged. */
  headers: Record<string, string>;
  /** The resource's attributes, service.name included. */
  resource: Record<string, string>;
  sampler: SamplerName;
  /** The ratio of the traceidratio samplers, 0 to 1. */
  samplerRatio: number;
  /** Longest wait for one export, and for the last one at shutdown. */
  timeoutMs: number;
  /** How long finished spans wait to be sent together. */
  scheduleDelayMs: number;
}

const SAMPLERS: readonly SamplerName[] = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];

/** The tracing part of the configuration; undefined when no endpoint is set or OTEL_SDK_DISABLED is true. Problems go to `problems`. */
export function parseTracingConfig(env: NodeJS.ProcessEnv, problems: string[]): TracingConfig | undefined {
  const specific = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const general = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!specific && !general) return undefined;
  if (env.OTEL_SDK_DISABLED === 'true') return undefined;
  // The traces endpoint is used as it is; the general one is a base below which traces go to v1/traces.
  const name = specific ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
  const url = endpointUrl(specific ? specific : `${general!.replace(/\/+$/, '')}/v1/traces`);
  // The value is not repeated: an endpoint may carry a collector's credentials.
  if (!url) problems.push(`${name} must be an http or https URL such as http://127.0.0.1:4318`);
  for (const variable of ['OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL']) {
    const protocol = env[variable];
    if (protocol && protocol !== 'http/json') problems.push(`${variable}: only http/json is supported (got "${protocol}")`);
  }
  const headers = {
    ...keyValues(env, 'OTEL_EXPORTER_OTLP_HEADERS', problems, true),
    ...keyValues(env, 'OTEL_EXPORTER_OTLP_TRACES_HEADERS', problems, true),
  };
  for (const header of Object.keys(headers)) {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(header)) problems.push(`OTEL_EXPORTER_OTLP_HEADERS: "${header}" is not a valid header name`);
  }
  const resource = keyValues(env, 'OTEL_RESOURCE_ATTRIBUTES', problems, false);
  resource['service.name'] = env.OTEL_SERVICE_NAME || resource['service.name'] || 'tool-server';
  const sampler = (env.OTEL_TRACES_SAMPLER || 'parentbased_always_on') as SamplerName;
  if (!SAMPLERS.includes(sampler)) problems.push(`OTEL_TRACES_SAMPLER must be one of ${SAMPLERS.join(', ')} (got "${env.OTEL_TRACES_SAMPLER}")`);
  const ratioText = env.OTEL_TRACES_SAMPLER_ARG;
  const samplerRatio = ratioText ? Number(ratioText) : 1;
  if (ratioText && !(samplerRatio >= 0 && samplerRatio <= 1)) problems.push(`OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1 (got "${ratioText}")`);
  const millis = (variable: string, fallback: number, min: number, max: number): number => {
    const raw = env[variable];
    if (!raw) return fallback;
    const n = Number(raw);
    if (Number.isInteger(n) && n >= min && n <= max) return n;
    problems.push(`${variable} must be an integer from ${min} to ${max} (milliseconds; got "${raw}")`);
    return fallback;
  };
  return {
    url: url ?? '',
    headers,
    resource,
    sampler,
    samplerRatio,
    timeoutMs: millis('OTEL_EXPORTER_OTLP_TRACES_TIMEOUT', millis('OTEL_EXPORTER_OTLP_TIMEOUT', 10_000, 100, 60_000), 100, 60_000),
    scheduleDelayMs: millis('OTEL_BSP_SCHEDULE_DELAY', 5000, 10, 60_000),
  };
}

function endpointUrl(text: string): string | undefined {
  try {
    const u = new URL(text);
    return (u.protocol === 'http:' || u.protocol === 'https:') && !u.hash ? u.href : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `key=value,key2=value2` with URL-encoded values (the W3C baggage format the OTEL_* lists use). A malformed
 * entry is a problem; for secret lists (headers) the entry itself is not repeated.
 */
function keyValues(env: NodeJS.ProcessEnv, variable: string, problems: string[], secret: boolean): Record<string, string> {
  const out: Record<string, string> = {};
  const raw = env[variable];
  if (!raw) return out;
  for (const entry of raw.split(',')) {
    if (entry.trim() === '') continue;
    const at = entry.indexOf('=');
    const key = at > 0 ? entry.slice(0, at).trim() : '';
    let value: string | undefined;
    try {
      value = at > 0 ? decodeURIComponent(entry.slice(at + 1).trim()) : undefined;
    } catch {
      value = undefined;
    }
    if (!key || value === undefined) {
      problems.push(`${variable} must be a list of key=value pairs separated by commas${secret ? '' : ` (bad entry "${entry.trim()}")`}`);
      continue;
    }
    out[key] = value;
  }
  return out;
}
