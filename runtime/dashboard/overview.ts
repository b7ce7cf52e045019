// The overview's figures from the hourly usage rows: totals over 1 / 7 / 30 days and a per-day, per-tool
// chart drawn as SVG on the server (no chart library, readable without JavaScript, with a table beside it).
import type { UsageRow } from '../billing/ledger.ts';

const DAY = 86_400_000;
export const CHART_DAYS = 30;
const PALETTE_SIZE = 8;

export interface Totals {
  calls: number;
  credits: number;
}

export interface Segment {
  y: number;
  height: number;
  colour: number;
  label: string;
}

export interface Chart {
  metric: 'calls' | 'credits';
  title: string;
  max: number;
  bars: Array<{ x: number; segments: Segment[] }>;
  ticks: Array<{ x: number; label: string }>;
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
    const max = Math.max(1, ...dayTotals);
    const bars = dayTotals.map((_, i) => {
      const date = new Date(firstDay + i * DAY).toISOString().slice(0, 10);
      let y = CHART.height;
      const segments: Segment[] = [];
      for (const t of tools) {
        const v = perDay.get(`${firstDay + i * DAY}|${t.tool}`)?.[metric] ?? 0;
        if (!v) continue;
        const height = (v / max) * CHART.height;
        y -= height;
        segments.push({ y: round(y), height: round(height), colour: t.colour, label: `${date} ${t.tool}: ${v} ${metric}` });
      }
      return { x: round(i * slot + CHART.gap / 2), segments };
    });
    const ticks = [0, 7, 14, 21, CHART_DAYS - 1].map((i) => ({
      x: round(i * slot + slot / 2),
      label: new Date(firstDay + i * DAY).toISOString().slice(5, 10),
    }));
    return { metric, title, max, bars, ticks };
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

export const CHART_SIZE = { width: CHART.width, height: CHART.height, barWidth: CHART.width / CHART_DAYS - CHART.gap };

const round = (n: number) => Math.round(n * 10) / 10;
