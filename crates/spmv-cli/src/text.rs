//! Text layout for the terminal: the width to wrap at and a word wrap with a hanging indent.

use std::io::IsTerminal;

/// The widest help text clap prints (`max_term_width` of the command).
pub const HELP_WIDTH: usize = 100;

/// The width of stdout's terminal, or `fallback` when stdout is not a terminal.
pub fn terminal_width(fallback: usize) -> usize {
    if !std::io::stdout().is_terminal() {
        return fallback;
    }
    terminal_size::terminal_size()
        .map(|(w, _)| usize::from(w.0))
        .filter(|&w| w >= 40)
        .unwrap_or(fallback)
}

/// The width clap wraps help text at: the terminal's, at most [`HELP_WIDTH`].
pub fn help_width() -> usize {
    terminal_size::terminal_size()
        .map(|(w, _)| usize::from(w.0).clamp(40, HELP_WIDTH))
        .unwrap_or(HELP_WIDTH)
}

/// Wraps `text` at `width` columns: the first line starts with `first`, the others with `rest`
/// (a hanging indent). Words longer than a line stay whole.
pub fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    let mut out = String::new();
    let mut line = String::from(first);
    let mut empty = true;
    for word in text.split_whitespace() {
        let fits = line.chars().count() + 1 + word.chars().count() <= width;
        if !empty && !fits {
            out.push_str(line.trim_end());
            out.push('\n');
            line = String::from(rest);
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(line.trim_end());
    out
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wraps_with_a_hanging_indent() {
        let w = wrap("aaa bbb ccc ddd", 9, "- ", "  ");
        assert_eq!(w, "- aaa bbb\n  ccc ddd");
        for line in w.lines() {
            assert!(line.chars().count() <= 9);
        }
        assert_eq!(
            wrap("averyveryverylongword x", 8, "", ""),
            "averyveryverylongword\nx"
        );
        assert_eq!(wrap("", 10, "> ", ""), ">");
    }
}
