//! Claim figures: each `ratio`, `lower_by_percent` and `order` claim drawn as what it claims — a
//! bar per participant of the compared statistic (one unit), and above them the measured ratio,
//! percentage or ranking beside the published one, its accepted interval and the finding. An order
//! claim's rows follow the published order, each with its published and measured rank.

use super::draw::{Scale, probe_color, unit_of};
use super::rows::{Chart, Mark, Row, draw};
use super::{Design, Figure, Input};
use crate::outputs::number;
use crate::outputs::verdict::{Measured, sides};
use crate::study::{Claim, Expected, Stat};

pub fn figures(input: &Input) -> Vec<Figure> {
    input
        .study
        .claims
        .iter()
        .filter(|c| matches!(c.stat, Stat::Ratio | Stat::LowerByPercent | Stat::Order))
        .filter_map(|c| figure(input, c))
        .collect()
}

/// Where the first side would be if the published ratio or percentage held exactly against the
/// second (only for a claim of two sides with the second measured): the value(s) in base units.
fn implied(claim: &Claim, sides: &[(String, Option<f64>)]) -> Option<Vec<f64>> {
    let [_, (_, Some(b))] = sides else {
        return None;
    };
    let published: Vec<f64> = match &claim.expected {
        Expected::Value(v) => vec![*v],
        Expected::Range(r) => r.to_vec(),
        Expected::Bound(bound) => [bound.above, bound.below].into_iter().flatten().collect(),
        Expected::Order(_) | Expected::Outcome(_) => return None,
    };
    let at = |p: f64| match claim.stat {
        Stat::Ratio => b * p,
        _ => b * (1.0 - p / 100.0),
    };
    Some(published.into_iter().map(at).collect())
}

/// The name whose suffix says the compared statistic's unit (`x_bytes`, `ns`, a result key).
fn unit_name(claim: &Claim) -> String {
    match claim.of.unwrap_or(Stat::RssMedian) {
        Stat::RssMedian | Stat::PeakMedian | Stat::BaselineMedian | Stat::PerTaskBytes => {
            "bytes".into()
        }
        Stat::Percentile => "ns".into(),
        _ => claim.metric.clone().unwrap_or_default(),
    }
}

fn figure(input: &Input, claim: &Claim) -> Option<Figure> {
    let sides = sides(input.study, claim, input.summary);
    if sides.is_empty() {
        return None;
    }
    let verdict = input.verdicts.iter().find(|v| v.claim == claim.id);
    let implied = implied(claim, &sides);
    let max = sides
        .iter()
        .filter_map(|s| s.1)
        .chain(implied.iter().flatten().copied())
        .fold(0.0, f64::max);
    let (unit, per) = unit_of(&unit_name(claim), max);
    let scale = Scale::linear(max, unit, per);
    let measured_rank = |id: &str| match verdict.and_then(|v| v.measured.as_ref()) {
        Some(Measured::Order(ids)) => ids.iter().position(|i| i == id).map(|k| k + 1),
        _ => None,
    };
    let order = claim.stat == Stat::Order;
    let rows = sides
        .iter()
        .enumerate()
        .map(|(i, (name, v))| {
            let mut value = v.map(|v| format!("{} {unit}", scale.show(v)));
            if order {
                let rank = measured_rank(name).map_or("—".into(), |r| r.to_string());
                value = Some(format!(
                    "{} · published rank {} · measured rank {rank}",
                    value.unwrap_or_else(|| "—".into()),
                    i + 1
                ));
            }
            Row {
                label: name.clone(),
                color: probe_color(input.study, name),
                marks: v.map(|v| vec![Mark::Bar(v)]).unwrap_or_default(),
                published: if i == 0 {
                    implied
                        .iter()
                        .map(|at| {
                            let shown: Vec<String> = at.iter().map(|v| scale.show(*v)).collect();
                            (
                                at.clone(),
                                format!(
                                    "{} {unit} at the published {}",
                                    shown.join("–"),
                                    number::expected(&claim.expected, claim.unit)
                                ),
                            )
                        })
                        .collect()
                } else {
                    Vec::new()
                },
                value,
                missing: v.is_none().then(|| "not measured".to_string()),
            }
        })
        .collect();
    let mut caption = vec![format!("“{}”", claim.text)];
    if let Some(v) = verdict {
        let accepted = match v.accepted {
            [None, None] => String::new(),
            [lo, hi] => format!(
                " · accepted {}",
                [lo, hi]
                    .map(|b| b.map_or("…".into(), |b| number::value(b, v.unit)))
                    .join(" to ")
            ),
        };
        caption.push(format!(
            "measured {} · published {}{accepted} · {}",
            number::measured(v.measured.as_ref(), v.unit),
            number::expected(&v.expected, v.unit),
            v.status_label()
        ));
    }
    let what = match claim.stat {
        Stat::Ratio => {
            "the first bar ÷ the others; ◇ where the first would be at the published ratio"
        }
        Stat::LowerByPercent => {
            "(1 − the first bar ÷ the second) × 100; ◇ where the first would be at the published percentage"
        }
        _ => "the bars ranked lowest first, rows in the published order",
    };
    caption.push(format!(
        "Bars: each participant's {}; the claim is {what}.",
        crate::study::claim::name(claim.of.unwrap_or(Stat::RssMedian))
    ));
    Some(draw(Chart {
        id: format!("claim-{}", claim.id),
        design: if order { Design::Order } else { Design::Ratio },
        title: format!("Claim {}", claim.id),
        caption,
        scale,
        rows,
        footer: Vec::new(),
    }))
}
