//! `inspect --timeline --svg FILE`: the timeline as a picture (issue 25).
//!
//! One lane per commit user (in the order of their first commit), each
//! snapshot a mark on its user's lane at its commit time (a square for an
//! END commit), each tag a diamond on the tag lane at its creation time,
//! joined to the snapshot it points at. Every mark carries a `<title>`,
//! which a browser shows on hover, and `data-*` attributes for tools.
//!
//! Coordinates are integers: the same table draws the same bytes. Text
//! from the table (commit users, tag names) goes only into text content,
//! JSON-quoted (so a control character cannot make the XML invalid) and
//! clipped; attributes hold numbers and fixed names only (the `svg` crate
//! does not escape quotes in attribute values).

use std::collections::BTreeMap;

use svg::node::element::{Circle, Group, Line, Polygon, Rectangle, Text, Title};
use svg::Document;

use sink_coordinator::END;
use sink_coordinator_testkit::render;

use crate::clip;
use crate::report::Event;

const WIDTH: u64 = 1200;
const LEFT: u64 = 260;
const RIGHT: u64 = 40;
const TOP: u64 = 70;
const LANE: u64 = 40;
const MARK: u64 = 5;

/// `s` clipped and JSON-quoted, with the two characters JSON leaves as they
/// are but XML 1.0 forbids (U+FFFE, U+FFFF) written as JSON escapes too.
fn label(s: &str, max: usize) -> String {
    render::json_str(&clip(s, max))
        .replace('\u{fffe}', "\\ufffe")
        .replace('\u{ffff}', "\\uffff")
}

fn identifier_text(identifier: u64) -> String {
    if identifier == END {
        "END".into()
    } else {
        identifier.to_string()
    }
}

/// Maps times to x positions: the span of the events onto the drawing's
/// width, or, when every event has the same time (a simulated clock), their
/// order.
struct Axis {
    t0: u64,
    span: u64,
    by_order: bool,
    count: u64,
}

impl Axis {
    fn new(times: &[u64]) -> Axis {
        let t0 = times.iter().copied().min().unwrap_or(0);
        let t1 = times.iter().copied().max().unwrap_or(0);
        Axis {
            t0,
            span: t1 - t0,
            by_order: t1 == t0,
            count: times.len() as u64,
        }
    }

    fn x(&self, time: u64, index: u64) -> u64 {
        let width = u128::from(WIDTH - LEFT - RIGHT);
        let (at, of) = if self.by_order {
            (
                u128::from(index),
                u128::from(self.count.saturating_sub(1).max(1)),
            )
        } else {
            (u128::from(time - self.t0), u128::from(self.span))
        };
        // at <= of, so the quotient is at most `width`.
        LEFT + (at * width / of) as u64
    }
}

/// A line across the plot at height `y` (a lane, the time axis).
fn across(class: &str, y: u64) -> Line {
    Line::new()
        .set("class", class)
        .set("x1", LEFT)
        .set("x2", WIDTH - RIGHT)
        .set("y1", y)
        .set("y2", y)
}

fn text(x: u64, y: u64, class: &str, content: String) -> Text {
    Text::new(content)
        .set("x", x)
        .set("y", y)
        .set("class", class)
}

/// The SVG document of `events` (the timeline of table `table`).
pub fn timeline_svg(table: &str, events: &[Event<'_>], rfc3339: fn(u64) -> String) -> String {
    let times: Vec<u64> = events
        .iter()
        .map(|e| match e {
            Event::Snapshot(s, _) => s.time_ms,
            Event::Tag(t) => t.create_time_ms,
        })
        .collect();
    let axis = Axis::new(&times);
    // Lanes: the tags first, then the commit users by first commit.
    let mut lanes: BTreeMap<&str, u64> = BTreeMap::new();
    let mut users: Vec<&str> = Vec::new();
    for e in events {
        if let Event::Snapshot(s, _) = e {
            if !lanes.contains_key(s.commit_user.as_str()) {
                lanes.insert(&s.commit_user, users.len() as u64 + 1);
                users.push(&s.commit_user);
            }
        }
    }
    let lane_y = |lane: u64| TOP + lane * LANE;
    let height = lane_y(users.len() as u64 + 1) + 40;

    let (snapshots, tags) = events.iter().fold((0, 0), |(s, t), e| match e {
        Event::Snapshot(..) => (s + 1, t),
        Event::Tag(_) => (s, t + 1),
    });
    let heading = format!(
        "table {}: {snapshots} snapshot(s), {tags} tag(s)",
        label(table, 120)
    );
    let mut doc = Document::new()
        .set("viewBox", (0, 0, WIDTH, height))
        .set("width", WIDTH)
        .set("height", height)
        .set("font-family", "sans-serif")
        .set("font-size", 12)
        .add(Title::new(format!("timeline of {heading}")))
        .add(svg::node::element::Style::new(
            ".snapshot{fill:#2b6cb0}.end{fill:#c05621}.tag{fill:#2f855a}\
                 .lane{stroke:#cbd5e0}.tag-link{stroke:#2f855a;stroke-dasharray:3 3}\
                 .axis{stroke:#4a5568}.heading{font-size:15px;font-weight:bold}",
        ))
        .add(text(10, 24, "heading", heading));

    // Lanes and their labels.
    let mut lane_group = Group::new().set("class", "lanes");
    let names = std::iter::once("tags".to_string()).chain(users.iter().map(|u| label(u, 32)));
    for (lane, name) in (0u64..).zip(names) {
        let y = lane_y(lane);
        lane_group = lane_group
            .add(text(10, y + 4, "lane-label", name))
            .add(across("lane", y));
    }
    doc = doc.add(lane_group);

    // Snapshots first (tags link to their positions), then tags.
    let mut at: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    let mut marks = Group::new().set("class", "snapshots");
    for (index, (e, &time)) in (0u64..).zip(events.iter().zip(&times)) {
        let Event::Snapshot(s, pointing) = e else {
            continue;
        };
        let (x, y) = (axis.x(time, index), lane_y(lanes[s.commit_user.as_str()]));
        at.insert(s.id, (x, y));
        let mut title = format!(
            "snapshot {} by {} for identifier {} at {}",
            s.id,
            label(&s.commit_user, 200),
            identifier_text(s.identifier),
            rfc3339(s.time_ms)
        );
        if !pointing.is_empty() {
            let names: Vec<String> = pointing.iter().map(|n| label(n, 100)).collect();
            title.push_str(&format!("; tags {}", names.join(", ")));
        }
        let common = |g: Group| {
            g.set("data-snapshot", s.id)
                .set("data-time", s.time_ms)
                .add(Title::new(title.clone()))
        };
        marks = marks.add(if s.identifier == END {
            common(
                Group::new()
                    .set("class", "snapshot end")
                    .set("data-identifier", "END"),
            )
            .add(
                Rectangle::new()
                    .set("x", x - MARK)
                    .set("y", y - MARK)
                    .set("width", 2 * MARK)
                    .set("height", 2 * MARK),
            )
        } else {
            common(
                Group::new()
                    .set("class", "snapshot")
                    .set("data-identifier", s.identifier),
            )
            .add(Circle::new().set("cx", x).set("cy", y).set("r", MARK))
        });
    }
    doc = doc.add(marks);

    let mut tag_group = Group::new().set("class", "tags");
    let y = lane_y(0);
    for (index, (e, &time)) in (0u64..).zip(events.iter().zip(&times)) {
        let Event::Tag(t) = e else {
            continue;
        };
        let x = axis.x(time, index);
        let mut g = Group::new()
            .set("class", "tag")
            .set("data-snapshot", t.snapshot_id)
            .set("data-time", t.create_time_ms)
            .add(Title::new(format!(
                "tag {} of snapshot {} (identifier {}) created at {}, expires {}",
                label(&t.name, 200),
                t.snapshot_id,
                identifier_text(t.identifier),
                rfc3339(t.create_time_ms),
                t.expire_time_ms.map_or_else(|| "never".into(), rfc3339)
            )));
        if let Some(&(sx, sy)) = at.get(&t.snapshot_id) {
            g = g.add(
                Line::new()
                    .set("class", "tag-link")
                    .set("x1", x)
                    .set("y1", y)
                    .set("x2", sx)
                    .set("y2", sy),
            );
        }
        let points = format!(
            "{},{} {},{} {},{} {},{}",
            x,
            y - MARK - 1,
            x + MARK + 1,
            y,
            x,
            y + MARK + 1,
            x - MARK - 1,
            y
        );
        tag_group = tag_group.add(g.add(Polygon::new().set("points", points)));
    }
    doc = doc.add(tag_group);

    // The time axis, with the first and last times.
    let bottom = height - 30;
    let (first, last) = (
        times.iter().copied().min().unwrap_or(0),
        times.iter().copied().max().unwrap_or(0),
    );
    let axis_caption = if axis.by_order && !times.is_empty() {
        "in commit order (every event has the same time)".to_string()
    } else {
        "time".to_string()
    };
    doc = doc.add(
        Group::new()
            .set("class", "axis")
            .add(across("axis", bottom))
            .add(text(LEFT, bottom + 18, "axis-start", rfc3339(first)))
            .add(
                text(WIDTH - RIGHT, bottom + 18, "axis-end", rfc3339(last))
                    .set("text-anchor", "end"),
            )
            .add(
                text(
                    (LEFT + WIDTH - RIGHT) / 2,
                    bottom + 18,
                    "axis-caption",
                    axis_caption,
                )
                .set("text-anchor", "middle"),
            ),
    );
    format!("{doc}\n")
}
