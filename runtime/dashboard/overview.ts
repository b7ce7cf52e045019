// The overview's figures from the hourly usage rows: totals over 1 / 7 / 30 days, a per-day, per-tool chart
// drawn as SVG on the server (no chart library, readable without JavaScript, with a table beside it), with a
// value axis and each day's figures on hover and keyboard focus (assets/app.js), and usage per server and key.
import type { UsageRow } from '../billing/ledger.ts';

const DAY = 86_400_000;
export const CHART_DAYS = 30;
const PALETTE_SIZE = 8;
/** The value axis has at most this many steps. */
const MAX_STEPS = 4;

export interface Totals {
  calls: number;
  credits: number;
}

export interface Segment {
  y: number;
  height: number;
  colour: number;
}

export interface Chart {
  metric: 'calls' | 'credits';
  title: string;
  /** No use at all in the period: the page says so instead of drawing empty axes. */
  empty: boolean;
  /** Each day: its column, its stacked segments and its figures in words (hover, focus, screen readers). */
  bars: Array<{ x: number; segments: Segment[]; label: string }>;
  /** The value axis: each tick's value and height as a share of the plot (a CSS class `at-<percent>`). */
  yTicks: Array<{ label: string; y: number; at: number }>;
  xTicks: Array<{ label: string }>;
}

export interface OverviewFigures {
  day: Totals;
  week: Totals;
  month: Totals;
  tools: Array<{ tool: string; colour: number; calls: number; credits: number }>;
  charts: Chart[];
  /** Days with any use, newest first, for the table alternative of the chart. */
  table: Array<{ date: string; tool: string; calls: number; credits: number }>;
}

const CHART = { width: 720, height: 160, gap: 4 };

/** The axis' step: 1, 2 or 5 times a power of ten, so that `max` takes at most MAX_STEPS steps. */
export function niceStep(max: number): number {
  if (max <= 0) return 1;
  const rough = max / MAX_STEPS;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough)!;
  return Math.max(1, step);
}

export function overviewFigures(rows: UsageRow[], now = Date.now()): OverviewFigures {
  const sum = (since: number): Totals =>
    rows.filter((r) => r.hour.getTime() > since).reduce((t, r) => ({ calls: t.calls + r.calls, credits: t.credits + r.credits }), { calls: 0, credits: 0 });
  const today = Math.floor(now / DAY) * DAY;
  const firstDay = today - (CHART_DAYS - 1) * DAY;
  const perDay = new Map<string, Totals>();
  const perTool = new Map<string, Totals>();
  for (const r of rows) {
    const day = Math.floor(r.hour.getTime() / DAY) * DAY;
    if (day < firstDay) continue;
    const key = `${day}|${r.tool}`;
    const d = perDay.get(key) ?? { calls: 0, credits: 0 };
    perDay.set(key, { calls: d.calls + r.calls, credits: d.credits + r.credits });
    const t = perTool.get(r.tool) ?? { calls: 0, credits: 0 };
    perTool.set(r.tool, { calls: t.calls + r.calls, credits: t.credits + r.credits });
  }
  const tools = [...perTool.entries()]
    .sort((a, b) => b[1].calls - a[1].calls || a[0].localeCompare(b[0]))
    .map(([tool, t], i) => ({ tool, colour: i % PALETTE_SIZE, ...t }));
  const chart = (metric: Chart['metric'], title: string): Chart => {
    const slot = CHART.width / CHART_DAYS;
    const dayTotals = Array.from({ length: CHART_DAYS }, (_, i) =>
      tools.reduce((s, t) => s + (perDay.get(`${firstDay + i * DAY}|${t.tool}`)?.[metric] ?? 0), 0),
    );
    const most = Math.max(0, ...dayTotals);
    const step = niceStep(most);
    const top = Math.max(step, Math.ceil(most / step) * step);
    const bars = dayTotals.map((total, i) => {
      const date = new Date(firstDay + i * DAY).toISOString().slice(0, 10);
      let y = CHART.height;
      const segments: Segment[] = [];
      const parts: string[] = [];
      for (const t of tools) {
        const v = perDay.get(`${firstDay + i * DAY}|${t.tool}`)?.[metric] ?? 0;
        if (!v) continue;
        const height = (v / top) * CHART.height;
        y -= height;
        segments.push({ y: round(y), height: round(height), colour: t.colour });
        parts.push(`${t.tool} ${v}`);
      }
      const label = `${date}: ${total.toLocaleString('en-US')} ${total === 1 ? metric.replace(/s$/, '') : metric}${parts.length ? ` (${parts.join(', ')})` : ''}`;
      return { x: round(i * slot + CHART.gap / 2), segments, label };
    });
    const yTicks = Array.from({ length: top / step + 1 }, (_, i) => {
      const value = i * step;
      return { label: value.toLocaleString('en-US'), y: round(CHART.height - (value / top) * CHART.height), at: Math.round((value / top) * 100) };
    });
    const xTicks = [0, 7, 14, 21, CHART_DAYS - 1].map((i) => ({ label: new Date(firstDay + i * DAY).toISOString().slice(5, 10) }));
    return { metric, title, empty: most === 0, bars, yTicks, xTicks };
  };
  const table = [...perDay.entries()]
    .map(([key, t]) => {
      const [day, tool] = key.split('|');
      return { date: new Date(Number(day)).toISOString().slice(0, 10), tool, ...t };
    })
    .sort((a, b) => b.date.localeCompare(a.date) || a.tool.localeCompare(b.tool));
  return {
    day: sum(now - DAY),
    week: sum(now - 7 * DAY),
    month: sum(now - CHART_DAYS * DAY),
    tools,
    charts: [chart('calls', 'Calls per day'), chart('credits', 'Credits per day')],
    table,
  };
}

export const CHART_SIZE = { width: CHART.width, height: CHART.height, barWidth: CHART.width / CHART_DAYS - CHART.gap, slot: CHART.width / CHART_DAYS };

/** Calls, credits and failures per server or per key over the rows, most credits first. */
export function usageBy(rows: UsageRow[], field: 'server_id' | 'key_id', name: (id: string) => string) {
  const totals = new Map<string, { calls: number; credits: number; errors: number }>();
  for (const r of rows) {
    const t = totals.get(r[field]) ?? { calls: 0, credits: 0, errors: 0 };
    totals.set(r[field], { calls: t.calls + r.calls, credits: t.credits + r.credits, errors: t.errors + r.errors });
  }
  return [...totals.entries()]
    .map(([id, t]) => ({ id, name: name(id), ...t }))
    .sort((a, b) => b.credits - a.credits || b.calls - a.calls || a.name.localeCompare(b.name));
}

const round = (n: number) => Math.round(n * 10) / 10;
