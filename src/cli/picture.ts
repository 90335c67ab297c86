/**
 * The operator tools' pictures: charts drawn by Apache ECharts' server-side SVG renderer (no DOM, no
 * browser), written as one self-contained .svg file. Every bar carries its figure as a label, so the
 * picture holds the same numbers the table prints.
 */
import { renameSync, writeFileSync } from 'node:fs';
import * as echarts from 'echarts';
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
}

export interface Chart {
  title: string;
  subtitle?: string;
  /** One per group of bars, left to right (top to bottom when horizontal). */
  categories: readonly string[];
  series: readonly ChartSeries[];
  /** Axis name, e.g. 'ms' or 'addresses'. */
  unit?: string;
  /** Long category names read better as rows. */
  horizontal?: boolean;
  /** How a figure is written on its bar; the table's own format, so both show the same text. */
  format?: (value: number) => string;
}

const ROW = 34;

export function chartSvg(chart: Chart): string {
  const format = chart.format ?? ((v: number) => String(v));
  const horizontal = chart.horizontal === true;
  const rows = chart.categories.length * Math.max(1, chart.series.filter((s) => s.stack === undefined).length);
  const width = horizontal ? 900 : Math.max(640, 90 * rows + 160);
  const height = horizontal ? Math.max(320, ROW * rows + 140) : 440;
  const instance = echarts.init(null, null, { renderer: 'svg', ssr: true, width, height });
  try {
    const categoryAxis = { type: 'category' as const, data: [...chart.categories], axisLabel: { interval: 0, ...(horizontal ? { width: 260, overflow: 'break' as const } : { rotate: chart.categories.length > 6 ? 30 : 0 }) } };
    const valueAxis = { type: 'value' as const, ...(chart.unit !== undefined && { name: chart.unit }) };
    instance.setOption({
      animation: false,
      backgroundColor: '#ffffff',
      title: { text: chart.title, ...(chart.subtitle !== undefined && { subtext: chart.subtitle }), left: 10 },
      legend: { top: chart.subtitle !== undefined ? 52 : 32, left: 10 },
      grid: { left: horizontal ? 280 : 70, right: 60, top: chart.subtitle !== undefined ? 90 : 70, bottom: horizontal ? 40 : 80 },
      xAxis: horizontal ? valueAxis : categoryAxis,
      yAxis: horizontal ? { ...categoryAxis, inverse: true } : valueAxis,
      series: chart.series.map((s) => ({
        name: s.name,
        type: s.kind ?? 'bar',
        data: [...s.values],
        ...(s.stack !== undefined && { stack: s.stack }),
        label: { show: true, position: s.stack !== undefined ? 'inside' : horizontal ? 'right' : 'top', formatter: ({ value }: { value: unknown }) => format(Number(value)) },
      })),
    });
    return instance.renderToSVGString();
  } finally {
    instance.dispose();
  }
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
