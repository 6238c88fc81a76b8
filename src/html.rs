//! HTML and inline SVG output: a bounded page buffer where every piece of text is escaped in
//! exactly one place.
//!
//! A [`Page`] takes two kinds of input and no third:
//! - markup, [`Page::markup`], which takes `&'static str` only: tags and attribute names can
//!   come from the program's own literals and nowhere else;
//! - text, [`Page::text`] and [`Page::fmt`] (numbers, formatted values), which always passes
//!   through [`escape_into`]: `&`, `<`, `>`, `"` and `'` become entities, so the same text is
//!   safe between tags and inside a quoted attribute; control characters other than tab, line
//!   feed and carriage return (which HTML forbids) become U+FFFD.
//!
//! So nothing read from a model, a config or a file can open a tag, close the `<svg>` or end an
//! attribute. The page is capped: past its capacity the page stops growing and remembers it,
//! and [`Page::finish`] is then `CAPACITY_EXCEEDED` naming the cap, never a page cut short
//! silently. SVG helpers ([`Page::rect`], [`Page::polyline`], ...) write the few shapes a chart
//! needs, with coordinates rounded to one decimal; the drawing stretches to its box
//! (`preserveAspectRatio="none"`), so labels belong in the HTML around it, where they stay
//! readable on a narrow screen.

use crate::error::Result;
use core::fmt::{self, Write as _};

/// The entity for `c`, if it needs one.
#[inline]
fn entity(c: char) -> Option<&'static str> {
    match c {
        '&' => Some("&amp;"),
        '<' => Some("&lt;"),
        '>' => Some("&gt;"),
        '"' => Some("&quot;"),
        '\'' => Some("&#39;"),
        '\t' | '\n' | '\r' => None,
        c if c.is_control() => Some("\u{fffd}"),
        _ => None,
    }
}

/// Appends `text` to `out` escaped for HTML text and quoted attribute values. The one place
/// where text becomes markup.
pub fn escape_into(out: &mut String, text: &str) {
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if let Some(e) = entity(c) {
            out.push_str(text.get(start..i).unwrap_or(""));
            out.push_str(e);
            start = i + c.len_utf8();
        }
    }
    out.push_str(text.get(start..).unwrap_or(""));
}

/// An HTML page being written, at most `cap` bytes.
pub struct Page {
    buf: String,
    cap: usize,
    cap_name: &'static str,
    full: bool,
}

impl Page {
    /// An empty page of at most `cap` bytes; `cap_name` (the constant's name) is said when the
    /// page does not fit.
    pub fn new(cap: usize, cap_name: &'static str) -> Page {
        Page { buf: String::new(), cap, cap_name, full: false }
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Whether the page ran out of room.
    pub fn is_full(&self) -> bool {
        self.full
    }

    /// Appends what `f` writes into a scratch string, if the page has room for it.
    fn append(&mut self, f: impl FnOnce(&mut String)) {
        if self.full {
            return;
        }
        let before = self.buf.len();
        f(&mut self.buf);
        if self.buf.len() > self.cap {
            self.buf.truncate(before);
            self.full = true;
        }
    }

    /// The program's own markup (tags, attribute names, CSS), written as it is.
    pub fn markup(&mut self, m: &'static str) {
        self.append(|b| b.push_str(m));
    }

    /// Text, escaped.
    pub fn text(&mut self, t: &str) {
        self.append(|b| escape_into(b, t));
    }

    /// Formatted text (numbers, times, values), escaped.
    pub fn fmt(&mut self, args: fmt::Arguments<'_>) {
        self.append(|b| {
            // Writing into a String cannot fail.
            let _ = Escaping(b).write_fmt(args);
        });
    }

    /// Text, escaped, with a line-break opportunity (`<wbr>`) after each `,` and `/`, so a long
    /// key or path wraps at its parts in a narrow column instead of anywhere.
    pub fn text_breakable(&mut self, t: &str) {
        let mut rest = t;
        while let Some(i) = rest.find([',', '/']) {
            let (part, tail) = rest.split_at(i + 1);
            self.text(part);
            self.markup("<wbr>");
            rest = tail;
        }
        self.text(rest);
    }

    /// Escaped text between two pieces of markup: `element("<td>", text, "</td>")`.
    pub fn element(&mut self, open: &'static str, t: &str, close: &'static str) {
        self.markup(open);
        self.text(t);
        self.markup(close);
    }

    /// The finished page; `CAPACITY_EXCEEDED` if it did not fit its cap.
    pub fn finish(self) -> Result<String> {
        if self.full {
            bail!(
                CapacityExceeded,
                "the page passed its cap of {} bytes ({}); narrow the period with --last or --since",
                self.cap,
                self.cap_name
            );
        }
        Ok(self.buf)
    }

    // ---------------------------------------------------------------------------------------
    // SVG shapes
    // ---------------------------------------------------------------------------------------

    /// ` name="value"`, the value rounded to one decimal.
    fn attr(&mut self, name: &'static str, value: f64) {
        self.markup(" ");
        self.markup(name);
        self.markup("=\"");
        self.fmt(format_args!("{:.1}", value));
        self.markup("\"");
    }

    /// `<svg viewBox="0 0 w h" ...>` with an accessible label; closed by [`Page::svg_close`].
    pub fn svg_open(&mut self, class: &'static str, w: u32, h: u32, label: &str) {
        self.markup("<svg class=\"");
        self.markup(class);
        self.markup("\" viewBox=\"");
        self.fmt(format_args!("0 0 {} {}", w, h));
        self.markup("\" preserveAspectRatio=\"none\" role=\"img\" aria-label=\"");
        self.text(label);
        self.markup("\">");
    }

    /// `</svg>`.
    pub fn svg_close(&mut self) {
        self.markup("</svg>");
    }

    /// A rectangle, with a tooltip when `title` is given.
    pub fn rect(&mut self, class: &'static str, x: f64, y: f64, w: f64, h: f64, title: Option<fmt::Arguments<'_>>) {
        self.markup("<rect class=\"");
        self.markup(class);
        self.markup("\"");
        self.attr("x", x);
        self.attr("y", y);
        self.attr("width", w);
        self.attr("height", h);
        match title {
            None => self.markup("/>"),
            Some(t) => {
                self.markup("><title>");
                self.fmt(t);
                self.markup("</title></rect>");
            }
        }
    }

    /// A line segment.
    pub fn line(&mut self, class: &'static str, (x1, y1): (f64, f64), (x2, y2): (f64, f64)) {
        self.markup("<line class=\"");
        self.markup(class);
        self.markup("\"");
        self.attr("x1", x1);
        self.attr("y1", y1);
        self.attr("x2", x2);
        self.attr("y2", y2);
        self.markup("/>");
    }

    /// An open polyline through `points` (nothing for no point).
    pub fn polyline(&mut self, class: &'static str, points: impl Iterator<Item = (f64, f64)>) {
        self.shape_points("polyline", class, points);
    }

    /// A closed polygon through `points`.
    pub fn polygon(&mut self, class: &'static str, points: impl Iterator<Item = (f64, f64)>) {
        self.shape_points("polygon", class, points);
    }

    fn shape_points(&mut self, shape: &'static str, class: &'static str, points: impl Iterator<Item = (f64, f64)>) {
        let mut any = false;
        for (x, y) in points {
            if !any {
                self.markup("<");
                self.markup(shape);
                self.markup(" class=\"");
                self.markup(class);
                self.markup("\" points=\"");
                any = true;
            } else {
                self.markup(" ");
            }
            self.fmt(format_args!("{:.1},{:.1}", x, y));
        }
        if any {
            self.markup("\"/>");
        }
    }
}

/// A `fmt::Write` that escapes what passes through it.
struct Escaping<'a>(&'a mut String);

impl fmt::Write for Escaping<'_> {
    fn write_char(&mut self, c: char) -> core::fmt::Result {
        crate::bytes::write_char(self, c)
    }

    fn write_str(&mut self, s: &str) -> fmt::Result {
        escape_into(self.0, s);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_formatted_text_are_escaped() {
        let mut p = Page::new(1024, "TEST_CAP");
        p.markup("<p>");
        p.text("<script>alert(\"x\")</script></svg> & 'q'");
        p.fmt(format_args!("{}", "<b>"));
        p.markup("</p>");
        let s = p.finish().unwrap();
        assert_eq!(
            s,
            "<p>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;/svg&gt; &amp; &#39;q&#39;&lt;b&gt;</p>"
        );
    }

    #[test]
    fn breakable_text_breaks_after_separators_only() {
        let mut p = Page::new(1024, "TEST_CAP");
        p.text_breakable("a,b_c/<d>");
        p.text_breakable("plain");
        assert_eq!(p.finish().unwrap(), "a,<wbr>b_c/<wbr>&lt;d&gt;plain");
    }

    #[test]
    fn control_characters_are_replaced_and_text_passes_whole() {
        let mut s = String::new();
        escape_into(&mut s, "a\u{0}b\u{7f}c\td\né");
        assert_eq!(s, "a\u{fffd}b\u{fffd}c\td\né");
    }

    #[test]
    fn a_full_page_is_an_error_that_names_the_cap() {
        let mut p = Page::new(8, "TEST_CAP");
        p.text("12345");
        p.text("6789");
        assert!(p.is_full());
        assert_eq!(p.len(), 5);
        let e = p.finish().unwrap_err();
        assert_eq!(e.code(), crate::error::Code::CapacityExceeded);
        assert!(e.message().contains("TEST_CAP"), "{}", e.message());
    }

    #[test]
    fn svg_shapes_and_titles() {
        let mut p = Page::new(4096, "TEST_CAP");
        p.svg_open("c", 100, 50, "a \"chart\"");
        p.rect("r", 1.0, 2.0, 3.5, 4.0, Some(format_args!("cycle {} <ok>", 3)));
        p.polyline("l", [(0.0, 1.0), (2.0, 3.0)].into_iter());
        p.polyline("l", core::iter::empty());
        p.line("g", (0.0, 1.0), (2.0, 3.0));
        p.markup("<text>");
        p.text("</svg>");
        p.markup("</text>");
        p.svg_close();
        let s = p.finish().unwrap();
        assert!(s.starts_with("<svg class=\"c\" viewBox=\"0 0 100 50\" preserveAspectRatio=\"none\" role=\"img\" aria-label=\"a &quot;chart&quot;\">"), "{s}");
        assert!(s.contains("<line class=\"g\" x1=\"0.0\" y1=\"1.0\" x2=\"2.0\" y2=\"3.0\"/>"), "{s}");
        let rect = "<rect class=\"r\" x=\"1.0\" y=\"2.0\" width=\"3.5\" height=\"4.0\"><title>cycle 3 &lt;ok&gt;</title></rect>";
        assert!(s.contains(rect), "{s}");
        assert!(s.contains("<polyline class=\"l\" points=\"0.0,1.0 2.0,3.0\"/>"), "{s}");
        assert_eq!(s.matches("<polyline").count(), 1);
        assert!(s.contains("<text>&lt;/svg&gt;</text>"), "{s}");
        assert!(s.ends_with("</svg>"));
    }
}
