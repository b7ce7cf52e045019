// OpenTelemetry traces, started only when an OTLP endpoint is configured: the SDK's tracer provider with a
// batch span processor and the OTLP/HTTP JSON exporter. Nothing is registered globally (several services
// may share a process in tests): the tracer and the propagator travel explicitly (spans.ts, outbound.ts).
import type { TextMapPropagator, Tracer } from '@opentelemetry/api';
import type { Logger } from '../log.ts';
import type { TracingConfig } from './config.ts';

export interface Tracing {
  tracer: Tracer;
  /** W3C trace context (traceparent, tracestate). */
  propagator: TextMapPropagator;
  /** Sends the spans still buffered, waiting at most the export timeout; then stops. */
  shutdown(): Promise<void>;
}

/** How often a failing export is logged at most (a collector that is down would otherwise log every batch). */
const FAILURE_LOG_EVERY_MS = 60_000;

export async function startTracing(config: TracingConfig, logger: Logger, version: string): Promise<Tracing> {
  // Loaded here, so that a service without an endpoint never loads the SDK.
  const [sdk, { OTLPTraceExporter }, { resourceFromAttributes }, core] = await Promise.all([
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/core'),
  ]);
  const otlp = new OTLPTraceExporter({ url: config.url, headers: config.headers, timeoutMillis: config.timeoutMs });
  let lastFailureLog = -Infinity;
  // The exporter reports failures only to its callback: log them (the endpoint's host, never its headers).
  const exporter: import('@opentelemetry/sdk-trace').SpanExporter = {
    export(spans, done) {
      otlp.export(spans, (result) => {
        if (result.code !== core.ExportResultCode.SUCCESS && performance.now() - lastFailureLog > FAILURE_LOG_EVERY_MS) {
          lastFailureLog = performance.now();
          logger.warn({ collector: new URL(config.url).host, spans: spans.length, reason: result.error?.message }, 'exporting traces failed');
        }
        done(result);
      });
    },
    shutdown: () => otlp.shutdown(),
    forceFlush: () => otlp.forceFlush(),
  };
  const ratio = new sdk.TraceIdRatioBasedSampler(config.samplerRatio);
  const samplers: Record<TracingConfig['sampler'], import('@opentelemetry/sdk-trace').Sampler> = {
    always_on: new sdk.AlwaysOnSampler(),
    always_off: new sdk.AlwaysOffSampler(),
    traceidratio: ratio,
    parentbased_always_on: new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() }),
    parentbased_always_off: new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() }),
    parentbased_traceidratio: new sdk.ParentBasedSampler({ root: ratio }),
  };
  const provider = new sdk.TracerProvider({
    resource: resourceFromAttributes({ 'service.version': version, ...config.resource }),
    sampler: samplers[config.sampler],
    spanProcessors: [new sdk.BatchSpanProcessor({ exporter, scheduledDelayMillis: config.scheduleDelayMs, exportTimeoutMillis: config.timeoutMs })],
  });
  logger.info({ collector: new URL(config.url).host, sampler: config.sampler }, 'exporting traces over OTLP/HTTP');
  return {
    tracer: provider.getTracer('tool-server', version),
    propagator: new core.W3CTraceContextPropagator(),
    async shutdown() {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), config.timeoutMs)));
      const done = await Promise.race([provider.shutdown().then(() => 'done' as const), late]).catch((err: unknown) => {
        logger.warn({ reason: (err as Error).message }, 'exporting the last traces failed');
        return 'done' as const;
      });
      clearTimeout(timer);
      if (done === 'late') logger.warn({ waitedMs: config.timeoutMs }, 'the last traces were not exported in time; shutting down without them');
    },
  };
}
