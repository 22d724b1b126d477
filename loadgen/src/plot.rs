//! `--plot`: an SVG of TPS, and of mean and p99 response time, per interval; for
//! pub/sub also the eventStat and dataStat distributions (latency by percentile).

use std::path::Path;

use plotters::prelude::*;

use crate::plan::Scenario;
use crate::report::Row;
use crate::stats::{Interval, Op};

/// Percentiles are drawn on a "nines" axis: x = -log10(1 - q), 0 → p0, 1 → p90,
/// 2 → p99, 3 → p99.9, so the tail gets as much room as the body.
const NINES: f64 = 3.0;

pub fn write_svg(
    path: &Path,
    title: &str,
    scenario: Scenario,
    rows: &[Row],
    totals: &Interval,
) -> anyhow::Result<()> {
    let pubsub = scenario == Scenario::Pubsub;
    let height = if pubsub { 960 } else { 640 };
    let root = SVGBackend::new(path, (960, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((if pubsub { 3 } else { 2 }, 1));
    let t_max = rows.last().map_or(1.0, |r| r.t).max(1.0);
    let tps_max = rows.iter().map(|r| r.recent_tps).fold(1.0, f64::max) * 1.1;
    let rsp_max = rows
        .iter()
        .map(|r| r.recent_p99.max(r.recent_rsp_time))
        .fold(0.1, f64::max)
        * 1.1;
    let what = if pubsub { "publishes/s" } else { "req/s" };

    let mut tps = ChartBuilder::on(&panels[0])
        .caption(format!("{title}: recentTPS"), ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..t_max, 0.0..tps_max)?;
    tps.configure_mesh()
        .max_light_lines(0)
        .x_desc("s")
        .y_desc(what)
        .draw()?;
    tps.draw_series(LineSeries::new(
        rows.iter().map(|r| (r.t, r.recent_tps)),
        &BLUE,
    ))?;

    let mut rsp = ChartBuilder::on(&panels[1])
        .caption(
            format!("{title}: response time per interval"),
            ("sans-serif", 18),
        )
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..t_max, 0.0..rsp_max)?;
    rsp.configure_mesh()
        .max_light_lines(0)
        .x_desc("s")
        .y_desc("ms")
        .draw()?;
    rsp.draw_series(LineSeries::new(
        rows.iter().map(|r| (r.t, r.recent_rsp_time)),
        &GREEN,
    ))?
    .label("mean")
    .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], GREEN));
    rsp.draw_series(LineSeries::new(
        rows.iter().map(|r| (r.t, r.recent_p99)),
        &RED,
    ))?
    .label("p99")
    .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED));
    rsp.configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()?;

    if pubsub {
        let curves: Vec<(Op, RGBColor)> = [(Op::Event, BLUE), (Op::Data, MAGENTA)]
            .into_iter()
            .filter(|(op, _)| !totals.hist(*op).is_empty())
            .collect();
        let curve = |op: Op| -> Vec<(f64, f64)> {
            let h = totals.hist(op);
            (0..=300)
                .map(|i| {
                    let x = f64::from(i) / 100.0;
                    let q = 1.0 - 10f64.powf(-x);
                    (x, h.value_at_quantile(q) as f64 / 1000.0)
                })
                .collect()
        };
        let y_max = curves
            .iter()
            .flat_map(|(op, _)| curve(*op))
            .map(|(_, y)| y)
            .fold(0.1, f64::max)
            * 1.1;
        let mut dist = ChartBuilder::on(&panels[2])
            .caption(
                format!("{title}: eventStat and dataStat by percentile"),
                ("sans-serif", 18),
            )
            .margin(10)
            // Room for the last label, p99.9, at the right edge.
            .margin_right(30)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..NINES, 0.0..y_max)?;
        dist.configure_mesh()
            .max_light_lines(0)
            // One label per nine: p0, p90, p99, p99.9.
            .x_labels(4)
            .x_desc("percentile")
            .x_label_formatter(&|x| {
                let q = 100.0 * (1.0 - 10f64.powf(-x));
                let label = format!("{q:.1}");
                format!("p{}", label.trim_end_matches(".0"))
            })
            .y_desc("ms")
            .draw()?;
        for (op, color) in curves {
            dist.draw_series(LineSeries::new(curve(op), &color))?
                .label(op.name())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
        dist.configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .draw()?;
    }
    root.present()?;
    Ok(())
}
