//! A tiny document model rendered twice, as Markdown and as HTML, so both reports say the same.

use std::fmt::Write;

/// One block of the report.
pub enum Block {
    /// A heading of level 1–3.
    H(u8, String),
    /// A paragraph (Markdown inline syntax is kept as is in the `.md`, escaped in the HTML).
    P(String),
    /// A list of items.
    List(Vec<String>),
    /// A table: header cells, then rows.
    Table(Vec<String>, Vec<Vec<String>>),
    /// An SVG written beside the report: file name and caption.
    Img(String, String),
}

/// Markdown rendering.
pub fn markdown(blocks: &[Block]) -> String {
    let mut s = String::new();
    for b in blocks {
        match b {
            Block::H(l, t) => {
                let _ = writeln!(s, "{} {t}\n", "#".repeat(*l as usize));
            }
            Block::P(t) => {
                let _ = writeln!(s, "{t}\n");
            }
            Block::List(items) => {
                for i in items {
                    let _ = writeln!(s, "- {i}");
                }
                s.push('\n');
            }
            Block::Table(h, rows) => {
                let esc = |c: &String| c.replace('|', "\\|");
                let _ = writeln!(
                    s,
                    "| {} |",
                    h.iter().map(esc).collect::<Vec<_>>().join(" | ")
                );
                let _ = writeln!(s, "|{}", "---|".repeat(h.len()));
                for r in rows {
                    let _ = writeln!(
                        s,
                        "| {} |",
                        r.iter().map(esc).collect::<Vec<_>>().join(" | ")
                    );
                }
                s.push('\n');
            }
            Block::Img(f, cap) => {
                let _ = writeln!(s, "![{cap}]({f})\n\n*{cap}*\n");
            }
        }
    }
    s
}

fn esc(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('`', "")
        .replace("**", "")
}

/// Whether a table cell is a figure (right-aligned, kept on one line: `12.3`, `-4 %`,
/// `[1.2 .. 3.4]`, `0.98x`) rather than text (left-aligned, wrapped to fit the page).
fn is_figure(cell: &str) -> bool {
    let c = cell.trim();
    c.chars().count() <= 28
        && c.chars()
            .next()
            .is_some_and(|f| f.is_ascii_digit() || "-+[~<>≈×—".contains(f))
        && !c.contains(": ")
}

/// HTML rendering (one self-contained page; the SVGs are files beside it).
pub fn html(title: &str, blocks: &[Block]) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{}</title>\n<style>\
         body{{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}}\
         table{{border-collapse:collapse;margin:1em 0;font-size:13px}}\
         td,th{{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}}\
         td.n{{text-align:right;white-space:nowrap}} td.t{{min-width:6em;max-width:38em}}\
         th{{background:#f2f2f2}} img{{max-width:100%;border:1px solid #eee}}\
         figure{{margin:1em 0}} figcaption{{font-size:13px;color:#555}}\
         pre{{background:#f7f7f7;padding:.6em;overflow-x:auto}}\
         </style></head><body>\n",
        esc(title)
    );
    for b in blocks {
        match b {
            Block::H(l, t) => {
                let _ = writeln!(s, "<h{l}>{}</h{l}>", esc(t));
            }
            Block::P(t) => {
                let _ = writeln!(s, "<p>{}</p>", esc(t));
            }
            Block::List(items) => {
                s.push_str("<ul>\n");
                for i in items {
                    let _ = writeln!(s, "<li>{}</li>", esc(i));
                }
                s.push_str("</ul>\n");
            }
            Block::Table(h, rows) => {
                s.push_str("<table><tr>");
                for c in h {
                    let _ = write!(s, "<th>{}</th>", esc(c));
                }
                s.push_str("</tr>\n");
                for r in rows {
                    s.push_str("<tr>");
                    for c in r {
                        let class = if is_figure(c) { "n" } else { "t" };
                        let _ = write!(s, "<td class=\"{class}\">{}</td>", esc(c));
                    }
                    s.push_str("</tr>\n");
                }
                s.push_str("</table>\n");
            }
            Block::Img(f, cap) => {
                let _ = writeln!(
                    s,
                    "<figure><img src=\"{f}\" alt=\"{0}\"><figcaption>{0}</figcaption></figure>",
                    esc(cap)
                );
            }
        }
    }
    s.push_str("</body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_both() {
        let d = vec![
            Block::H(1, "T".into()),
            Block::Table(
                vec!["a".into(), "b".into()],
                vec![vec!["1".into(), "<2>".into()]],
            ),
        ];
        assert!(markdown(&d).contains("| a | b |\n|---|---|\n| 1 | <2> |"));
        assert!(html("T", &d).contains("<td class=\"n\">&lt;2&gt;</td>"));
        // Text (a claim, a protocol name) is left-aligned and wraps; figures stay right.
        assert!(is_figure("12.3") && is_figure("[1.2 .. 3.4]") && is_figure("-4 %"));
        assert!(!is_figure("thin") && !is_figure("2 loads per lock on the fast path, seed 000"));
    }
}
