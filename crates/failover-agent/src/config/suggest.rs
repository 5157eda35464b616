//! Pointing at the mistake: where in the file a TOML syntax error is, and
//! which known key an unknown one was probably meant to be.

/// Line and column, both from 1, of byte `offset` in `text`; the column
/// counts characters, as an editor does. An offset past the end (or inside
/// a character) is clamped to the end.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// The known key nearest to `unknown`, when it is near enough to be a typo:
/// at most one edit (a transposition counts as one) per three characters of
/// the known key, and at least one.
pub(crate) fn nearest<'k>(unknown: &str, known: &[&'k str]) -> Option<&'k str> {
    known
        .iter()
        .map(|k| (strsim::osa_distance(unknown, k), *k))
        .filter(|(distance, k)| *distance <= (k.chars().count() / 3).max(1))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_count_lines_and_characters() {
        let text = "a = 1\nb = \"é\" x\n\nc";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 4), (1, 5));
        assert_eq!(line_column(text, 6), (2, 1));
        // "é" is two bytes, one column.
        let x = text.find('x').unwrap_or_default();
        assert_eq!(line_column(text, x), (2, 9));
        assert_eq!(line_column(text, text.len()), (4, 2));
        // Past the end, or inside a character: clamped, never a panic.
        assert_eq!(line_column(text, usize::MAX), (4, 2));
        let inside = text.find('é').unwrap_or_default() + 1;
        assert_eq!(line_column(text, inside), (2, 6));
    }

    #[test]
    fn a_near_key_is_suggested_a_far_one_is_not() {
        let known = ["poll_interval", "takeover_after", "role", "listen", "app"];
        let table: &[(&str, Option<&str>)] = &[
            ("pol_interval", Some("poll_interval")),
            ("poll-interval", Some("poll_interval")),
            ("takeover_afer", Some("takeover_after")),
            ("rloe", Some("role")),
            ("Role", Some("role")),
            ("lisen", Some("listen")),
            ("apps", Some("app")),
            ("interval", None),
            ("foo", None),
            ("", None),
            ("ap", Some("app")),
            ("xyz", None),
        ];
        for (unknown, expected) in table {
            assert_eq!(nearest(unknown, &known), *expected, "{unknown:?}");
        }
        // A huge or hostile key costs a bounded comparison and suggests nothing.
        assert_eq!(nearest(&"x".repeat(100_000), &known), None);
        assert_eq!(nearest("\u{0}\n<3>", &known), None);
    }
}
