/**
 * An ECharts chart drawn with its SVG renderer (text stays text: readable by screen readers and
 * by the browser tests), updated in place when its option changes rather than redrawn.
 */
import { useEffect, useRef } from 'preact/hooks';
import * as echarts from 'echarts/core';
import { BarChart, LineChart } from 'echarts/charts';
import { GridComponent, LegendComponent, TooltipComponent, TitleComponent } from 'echarts/components';
import { SVGRenderer } from 'echarts/renderers';

echarts.use([LineChart, BarChart, GridComponent, LegendComponent, TooltipComponent, TitleComponent, SVGRenderer]);

export type ChartOption = echarts.EChartsCoreOption;

export function Chart({ option, height = 260, label }: { option: ChartOption; height?: number; label: string }) {
  const el = useRef<HTMLDivElement>(null);
  const chart = useRef<echarts.ECharts | null>(null);
  useEffect(() => {
    const c = echarts.init(el.current!, undefined, { renderer: 'svg' });
    chart.current = c;
    const resize = () => c.resize();
    window.addEventListener('resize', resize);
    return () => {
      window.removeEventListener('resize', resize);
      c.dispose();
      chart.current = null;
    };
  }, []);
  useEffect(() => {
    chart.current?.setOption(option, { notMerge: false, lazyUpdate: true });
  }, [option]);
  return <div class="chart" ref={el} style={{ height: `${height}px` }} role="img" aria-label={label} />;
}
