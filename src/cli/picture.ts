/**
 * The operator tools' pictures: charts drawn by Apache ECharts' server-side SVG renderer (no DOM, no
 * browser), written as one self-contained .svg file. Every bar carries its figure as a label, so the
 * picture holds the same numbers the table prints.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { CliError, type Option } from './command.js';

export const pictureOption: Record<string, Option> = {
  picture: { type: 'string', value: 'FILE', help: 'also draw the result as a self-contained SVG chart in FILE' },
};

export interface ChartSeries {
  name: string;
  values: readonly number[];
  /** Bars (the default), or a line over the categories (e.g. a limit). */
  kind?: 'bar' | 'line';
  /** Bars of the same stack pile up (e.g. used, then free). */
  stack?: string;
  /** What each bar is labelled with, when its length is not its figure (e.g. bars scaled to compare figures of different units). */
  labels?: readonly string[];
}

export interface Chart {
  title: string;
  subtitle?: string;
  /** One per group of bars, left to right (top to bottom when horizontal). */
  categories: readonly string[];
  series: readonly ChartSeries[];
  /** Axis name, e.g. 'ms' or 'addresses'. */
  unit?: string;
  /** The value axis ends here (e.g. 100 for percentages), unless a value goes beyond it. */
  axisEnd?: number;
  /** Long category names read better as rows. */
  horizontal?: boolean;
  /** How a figure is written on its bar; the table's own format, so both show the same text. */
  format?: (value: number) => string;
}

const ROW = 34;

/** ECharts is loaded when a picture is drawn: every other `ostia` command starts without it. */
export async function chartSvg(chart: Chart): Promise<string> {
  const echarts = await import('echarts');
  const format = chart.format ?? ((v: number) => String(v));
  const horizontal = chart.horizontal === true;
  const rows = chart.categories.length * Math.max(1, chart.series.filter((s) => s.stack === undefined).length);
  const width = horizontal ? 900 : Math.max(640, 90 * rows + 160);
  const height = horizontal ? Math.max(320, ROW * rows + 140) : 440;
  const instance = echarts.init(null, null, { renderer: 'svg', ssr: true, width, height });
  try {
    const categoryAxis = { type: 'category' as const, data: [...chart.categories], axisLabel: { interval: 0, ...(horizontal ? { width: 260, overflow: 'break' as const } : { rotate: chart.categories.length > 6 ? 30 : 0 }) } };
    const end = chart.axisEnd;
    const valueAxis = { type: 'value' as const, ...(chart.unit !== undefined && { name: chart.unit }), ...(end !== undefined && { max: ({ max }: { max: number }) => Math.max(end, max) }) };
    instance.setOption({
      animation: false,
      backgroundColor: '#ffffff',
      title: { text: chart.title, ...(chart.subtitle !== undefined && { subtext: chart.subtitle }), left: 10 },
      legend: { top: chart.subtitle !== undefined ? 52 : 32, left: 10, itemGap: 28 },
      grid: { left: 40, right: 70, top: chart.subtitle !== undefined ? 90 : 70, bottom: horizontal ? 40 : 80, containLabel: true },
      xAxis: horizontal ? valueAxis : categoryAxis,
      yAxis: horizontal ? { ...categoryAxis, inverse: true } : valueAxis,
      series: chart.series.map((s) => ({
        name: s.name,
        type: s.kind ?? 'bar',
        data: [...s.values],
        ...(s.stack !== undefined && { stack: s.stack }),
        label: { show: true, position: s.stack !== undefined ? 'inside' : horizontal ? 'right' : 'top', formatter: labelOf(s, format) },
        // Thin segments of a stack would print over each other.
        ...(s.stack !== undefined && { labelLayout: { hideOverlap: true } }),
      })),
    });
    return instance.renderToSVGString();
  } finally {
    instance.dispose();
  }
}

function labelOf(s: ChartSeries, format: (value: number) => string): (p: { value: unknown; dataIndex: number }) => string {
  if (s.labels) return ({ dataIndex }) => s.labels![dataIndex] ?? '';
  // A zero segment of a stack draws nothing, so it is not labelled.
  return ({ value }) => (s.stack !== undefined && Number(value) === 0 ? '' : format(Number(value)));
}

/** The chart drawn into `path`. */
export async function drawPicture(path: string, chart: Chart): Promise<void> {
  writePicture(path, await chartSvg(chart));
}

/** Written whole or not at all: a reader never sees half a picture. */
export function writePicture(path: string, svg: string): void {
  const partial = `${path}.partial-${process.pid}`;
  try {
    writeFileSync(partial, svg, { mode: 0o644 });
    renameSync(partial, path);
  } catch (e) {
    throw new CliError(`cannot write the picture ${path}: ${(e as Error).message}`, 'Give --picture a path in a directory you can write to.');
  }
}
