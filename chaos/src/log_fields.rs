//! The split every line parser of the chaos logs starts with (the `L`, `O`, `R` and `F` lines): a tag,
//! then a fixed number of space-separated fields.

/// The `N` fields of `line` after its tag, if its first field is `tag` and exactly `N` follow; `None`
/// for a line of another kind or a truncated one (a killed writer may leave one).
pub fn fields<'a, const N: usize>(line: &'a str, tag: &str) -> Option<[&'a str; N]> {
    let mut f = line.split(' ');
    if f.next()? != tag {
        return None;
    }
    f.collect::<Vec<_>>().try_into().ok()
}
