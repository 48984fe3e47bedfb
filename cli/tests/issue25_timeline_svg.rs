//! Issue 25, `sinkcoord inspect --svg FILE`: the timeline as a picture. The
//! SVG is parsed as XML and checked mark by mark against the table: a lane
//! per commit user, a mark per snapshot on its user's lane, left to right
//! in time, a square for END, a diamond per tag joined to its snapshot,
//! and hostile names kept out of the markup.

use roxmltree::{Document, Node};
use sink_coordinator::END;

mod common;
use common::job::{sinkcoord, Job};
use common::{path, Scratch};

fn class<'a>(doc: &'a Document<'a>, name: &str) -> Vec<Node<'a, 'a>> {
    doc.descendants()
        .filter(|n| n.attribute("class") == Some(name))
        .collect()
}

fn title(n: Node<'_, '_>) -> String {
    n.children()
        .find(|c| c.has_tag_name("title"))
        .and_then(|t| t.text())
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn num(n: Node<'_, '_>, attr: &str) -> u64 {
    n.attribute(attr).unwrap().parse().unwrap()
}

/// The x and y of a snapshot's mark (a circle, or an END square).
fn position(n: Node<'_, '_>) -> (u64, u64) {
    let shape = n
        .children()
        .find(|c| c.is_element() && !c.has_tag_name("title"))
        .unwrap();
    if shape.has_tag_name("circle") {
        (num(shape, "cx"), num(shape, "cy"))
    } else {
        (num(shape, "x") + 5, num(shape, "y") + 5)
    }
}

#[test]
fn the_timeline_picture_has_a_mark_per_snapshot_and_tag_on_its_lane_in_time_order() {
    let s = Scratch::new("issue25-svg", "two-users");
    // Two commit users interleaved; a savepoint tag; job-a ends (END).
    let hostile = "b\"<&>\u{1}\u{ffff}";
    let mut a = Job::new(&s.0, "job-a", None);
    let mut b = Job::new(&s.0, hostile, None);
    a.commit(1, false, 1_000);
    b.commit(1, true, 2_000);
    a.commit(2, true, 3_000);
    b.commit(2, false, 5_000);
    a.commit(END, false, 9_000);
    let file = s.0.with_file_name("two-users.svg");
    let (code, out, err) = sinkcoord(&["inspect", path(&s.0), "--svg", path(&file)]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("5 snapshot(s)"),
        "the listing is printed as before: {out}"
    );

    let text = std::fs::read_to_string(&file).unwrap();
    let doc = Document::parse(&text).expect("the picture is well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let snapshots: Vec<Node> = doc
        .descendants()
        .filter(|n| {
            n.attribute("data-snapshot").is_some() && n.attribute("data-identifier").is_some()
        })
        .collect();
    assert_eq!(snapshots.len(), 5, "{text}");
    // Lanes: tags, then job-a and the hostile user by first commit.
    let labels: Vec<&str> = class(&doc, "lane-label")
        .iter()
        .map(|n| n.text().unwrap().trim())
        .collect();
    assert_eq!(labels, ["tags", "\"job-a\"", "\"b\\\"<&>\\u0001\\uffff\""]);
    let lanes: Vec<u64> = class(&doc, "lane").iter().map(|n| num(*n, "y1")).collect();
    let (mut last_x, mut seen) = (0, Vec::new());
    for n in &snapshots {
        let id = num(*n, "data-snapshot");
        let (x, y) = position(*n);
        assert!(x > last_x, "snapshot {id} is right of the one before");
        last_x = x;
        let t = title(*n);
        let user_lane = if t.contains("job-a") {
            lanes[1]
        } else {
            lanes[2]
        };
        assert_eq!(y, user_lane, "snapshot {id} on its user's lane: {t}");
        assert!(t.starts_with(&format!("snapshot {id} by ")), "{t}");
        seen.push(id);
    }
    assert_eq!(seen, [1, 2, 3, 4, 5]);
    // Times scale: snapshot 4 (5 s) is nearer 5 (9 s) than 1 (1 s) in x.
    let xs: Vec<u64> = snapshots.iter().map(|n| position(*n).0).collect();
    assert_eq!(
        xs[4] - xs[3],
        2 * (xs[3] - xs[2]),
        "{xs:?}: 4 s and 2 s apart"
    );
    let end: Vec<Node> = class(&doc, "snapshot end");
    assert_eq!(end.len(), 1);
    assert_eq!(end[0].attribute("data-identifier"), Some("END"));
    assert!(title(end[0]).contains("identifier END"));
    // Two savepoint tags, on the tag lane, each joined to its snapshot.
    let tags = class(&doc, "tag");
    assert_eq!(tags.len(), 2);
    for t in &tags {
        let target = num(*t, "data-snapshot");
        let mark = snapshots
            .iter()
            .find(|n| num(**n, "data-snapshot") == target)
            .unwrap();
        let link = t
            .children()
            .find(|c| c.attribute("class") == Some("tag-link"))
            .unwrap();
        assert_eq!((num(link, "x2"), num(link, "y2")), position(*mark));
        assert_eq!(num(link, "y1"), lanes[0]);
        assert!(title(*t).starts_with("tag \"savepoint-"), "{}", title(*t));
    }
    // The same table draws the same bytes.
    let again = s.0.with_file_name("again.svg");
    sinkcoord(&["inspect", path(&s.0), "--svg", path(&again), "--native"]);
    assert_eq!(std::fs::read_to_string(&again).unwrap(), text);
}

#[test]
fn a_picture_that_cannot_be_written_fails_the_command() {
    let s = Scratch::new("issue25-svg", "unwritable");
    Job::new(&s.0, "job", None).commit(1, false, 1);
    let file = s.0.join("no-such-dir").join("t.svg");
    let (code, _, err) = sinkcoord(&["inspect", path(&s.0), "--svg", path(&file)]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("cannot write the picture"), "{err}");
}
