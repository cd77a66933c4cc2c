//! `figure.svg`: the memory figure on its own (`crate::outputs::figure`'s `memory` design), for
//! readers of report.md; report.html holds every figure.

use anyhow::Result;

use crate::outputs::figure;
use crate::outputs::report::{Format, ReportInput};
use crate::run::run_dir;

/// `figure.svg`.
pub struct Figure;

impl Format for Figure {
    fn name(&self) -> &'static str {
        run_dir::FIGURE
    }

    fn render(&self, input: &ReportInput) -> Result<Vec<u8>> {
        let input = figure::Input {
            study: input.study,
            summary: input.summary,
            verdicts: input.verdicts,
            classes: input.per_class.map_or(&[], |p| &p.summaries[..]),
        };
        Ok(figure::memory(&input).svg.into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outputs::report::fixture;
    use crate::study::Stat;

    #[test]
    fn snapshot() {
        let (study, samples) = (fixture::study(), fixture::samples());
        let (summary, verdicts) = (fixture::summary(), fixture::verdicts());
        let input = fixture::input(&study, &samples, &summary, &verdicts);
        let svg = String::from_utf8(Figure.render(&input).unwrap()).unwrap();
        assert_eq!(
            svg.matches("<circle").count(),
            23,
            "a dot per valid process"
        );
        assert_eq!(svg.matches("class=\"panel\"").count(), 4);
        for c in &study.claims {
            let wanted = matches!(c.stat, Stat::RssMedian) && c.tasks.is_some();
            assert_eq!(svg.contains(&format!("· {}", c.id)), wanted, "{}", c.id);
        }
        insta::assert_snapshot!("figure_svg", svg);
    }
}
