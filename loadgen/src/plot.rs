//! `--plot`: TPS and mean response time per interval, as an SVG.

use std::path::Path;

use plotters::prelude::*;

use crate::report::Row;

pub fn write_svg(path: &Path, title: &str, rows: &[Row]) -> anyhow::Result<()> {
    let root = SVGBackend::new(path, (960, 640)).into_drawing_area();
    root.fill(&WHITE)?;
    let (upper, lower) = root.split_vertically(320);
    let t_max = rows.last().map_or(1.0, |r| r.t).max(1.0);
    let tps_max = rows.iter().map(|r| r.recent_tps).fold(1.0, f64::max) * 1.1;
    let rsp_max = rows.iter().map(|r| r.recent_rsp_time).fold(0.1, f64::max) * 1.1;

    let mut tps = ChartBuilder::on(&upper)
        .caption(format!("{title}: recentTPS"), ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..t_max, 0.0..tps_max)?;
    tps.configure_mesh().x_desc("s").y_desc("req/s").draw()?;
    tps.draw_series(LineSeries::new(
        rows.iter().map(|r| (r.t, r.recent_tps)),
        &BLUE,
    ))?;

    let mut rsp = ChartBuilder::on(&lower)
        .caption(format!("{title}: recentRspTime"), ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..t_max, 0.0..rsp_max)?;
    rsp.configure_mesh().x_desc("s").y_desc("ms").draw()?;
    rsp.draw_series(LineSeries::new(
        rows.iter().map(|r| (r.t, r.recent_rsp_time)),
        &RED,
    ))?;
    root.present()?;
    Ok(())
}
