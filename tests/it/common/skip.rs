//! Skipping a test the current server cannot run, named by the test's own path so that a renamed
//! test cannot skip under a stale name.

/// The path of the test function this expands in, as the harness names it (`module::test`).
macro_rules! this_test {
    () => {{
        fn here() {}
        let full = std::any::type_name_of_val(&here);
        // `it::module::test::{{closure}}::here`: without the binary's name, the async body's
        // closure and the marker function.
        let path = full
            .trim_end_matches("::here")
            .trim_end_matches("::{{closure}}");
        path.split_once("::").map_or(path, |(_, rest)| rest)
    }};
}
pub(crate) use this_test;

/// Returns from the test (after saying why, see `testkit::server::skip_unless`) unless the current
/// server has what it needs: `skip_unless!(Tls)`.
#[allow(unused_macros)] // the observability tests share these helpers and skip nothing
macro_rules! skip_unless {
    ($needs:ident) => {
        if !testkit::server::skip_unless(
            $crate::common::this_test!(),
            testkit::server::Needs::$needs,
        ) {
            return;
        }
    };
}
pub(crate) use skip_unless;

#[test]
fn a_test_is_named_as_the_harness_names_it() {
    assert_eq!(
        this_test!(),
        "common::skip::a_test_is_named_as_the_harness_names_it"
    );
}

#[tokio::test]
async fn an_async_test_is_named_as_the_harness_names_it() {
    assert_eq!(
        this_test!(),
        "common::skip::an_async_test_is_named_as_the_harness_names_it"
    );
}
