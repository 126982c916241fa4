//! Tests of the plots: colours, tick labels, and charts that render.

use super::line_charts::*;
use super::style::*;
use super::*;

/// A row has one colour in every chart, whatever its place in the chart; the catalog's
/// protocols and anchors all differ; none is pale on white.
#[test]
fn one_colour_per_row() {
    assert_eq!(color_for("user-loop-thin"), color_for("thin"));
    assert_ne!(color_for("user-loop-thin-nested"), color_for("thin"));
    let names: Vec<&str> = crate::subject::subject_names()
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| !n.starts_with("sol-"))
        .collect();
    assert!(
        names.len() <= PALETTE.len(),
        "palette too small for {names:?}"
    );
    let colours: Vec<RGBColor> = names.iter().map(|n| color_for(n)).collect();
    for (i, a) in colours.iter().enumerate() {
        assert!(!colours[..i].contains(a), "{} shares a colour", names[i]);
        let luma = 0.299 * f64::from(a.0) + 0.587 * f64::from(a.1) + 0.114 * f64::from(a.2);
        assert!(luma < 190.0, "{} is pale ({luma})", names[i]);
    }
}

/// The log axes read 1, 10, 1k, not 1e3.
#[test]
fn log_axis_labels() {
    let path = std::env::temp_dir().join(format!("objmon-plot-{}.svg", std::process::id()));
    let s: Vec<Series> = vec![
        (
            "thin".into(),
            vec![(1.0, 5.0, 4.0, 6.0), (1e4, 2e4, 1e4, 3e4)],
        ),
        (
            "fat".into(),
            vec![(1.0, 50.0, 40.0, 60.0), (1e4, 5e5, 4e5, 6e5)],
        ),
    ];
    lines(&path, "t", "x", "y", &s, true).unwrap();
    let svg: String = std::fs::read_to_string(&path)
        .unwrap()
        .split_whitespace()
        .collect();
    std::fs::remove_file(&path).unwrap();
    assert!(svg.contains(">1k<") && svg.contains(">100k<"), "{svg}");
    assert!(!svg.contains("e3<") && !svg.contains("e4<"));
}

/// 20+ lines become one panel per family on shared axes: every family's title, each row
/// in its one colour, and the reference rows in the other families' panels; fewer lines
/// stay one chart.
#[test]
fn small_multiples_by_family() {
    let path = std::env::temp_dir().join(format!("objmon-sm-{}.svg", std::process::id()));
    let names = crate::subject::subject_names();
    let mut s: Vec<Series> = names
        .iter()
        .map(|(n, _)| {
            (
                n.to_string(),
                vec![(1.0, 5.0, 4.0, 6.0), (4.0, 9.0, 8.0, 10.0)],
            )
        })
        .collect();
    s.push(("hotspot25-lm2".into(), vec![(1.0, 7.0, 6.0, 8.0)]));
    assert!(s.len() >= SMALL_MULTIPLES_AT);
    for (n, _) in &names {
        assert!(family_of(n) < FAMILIES.len(), "{n} has no family");
    }
    assert_eq!(family_of("fable[learn-limit=3]"), family_of("fable"));
    assert_eq!(family_of("user-loop-thin-nested"), family_of("thin"));
    let svg_of = |s: &[Series]| {
        lines(&path, "t", "threads", "ns", s, false).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        svg
    };
    let svg = svg_of(&s);
    for f in FAMILIES {
        assert!(svg.contains(f), "no panel {f}");
    }
    // Five panels with references (the anchors' own panel draws them as its rows).
    assert_eq!(svg.matches("std-mutex (ref)").count(), FAMILIES.len() - 1);
    let hex = |c: RGBColor| format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2);
    assert!(svg.contains(&hex(color_for("thin"))));
    // Whole-number x (threads): no "1.5" tick.
    assert!(!svg.contains(">1.5<"));
    let few = svg_of(&s[..5]);
    assert!(!few.contains(FAMILIES[0]) && !few.contains("(ref)"));
}

/// ProdCons' bars on a log axis: rows a thousand times apart both readable.
#[test]
fn log_bars() {
    let path = std::env::temp_dir().join(format!("objmon-bars-{}.svg", std::process::id()));
    let rows: Vec<Bar> = vec![
        ("thin".into(), 20.0, 18.0, 25.0),
        ("fat".into(), 20_000.0, 15_000.0, 30_000.0),
    ];
    bars_log(&path, "t", "ns", &rows).unwrap();
    let svg: String = std::fs::read_to_string(&path)
        .unwrap()
        .split_whitespace()
        .collect();
    std::fs::remove_file(&path).unwrap();
    assert!(svg.contains(">100<") && svg.contains(">10k<"), "{svg}");
}

#[test]
fn log_ticks() {
    assert_eq!(tick(1.0), "1");
    assert_eq!(tick(10.0), "10");
    assert_eq!(tick(1000.0), "1k");
    assert_eq!(tick(20_000.0), "20k");
    assert_eq!(tick(1e6), "1M");
    assert_eq!(tick(2.5e9), "2.5G");
    assert_eq!(tick(0.1), "0.1");
    assert_eq!(log_tick(200.0), "200");
    assert_eq!(log_tick(5000.0), "5k");
    assert_eq!(log_tick(700.0), "");
    assert_eq!(log_tick(1000.0), "1k");
}
