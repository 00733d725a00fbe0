use super::*;

const APP: &str =
    "def main():\n    print(\"Welcom to the app\")\n\n\nif __name__ == \"__main__\":\n    main()\n";

#[test]
fn a_block_that_keeps_most_of_the_file_and_elides_nothing_is_the_whole_file() {
    let fixed = APP.replace("Welcom", "Welcome");
    assert!(is_whole_file(APP, &fixed));
    // Blank lines and indentation changes do not matter; one line changed of four is fine.
    assert!(is_whole_file(APP, &fixed.replace("\n\n\n", "\n\n")));
    // The function alone drops the entry point: a snippet, not the file.
    assert!(!is_whole_file(
        APP,
        "def main():\n    print(\"Welcome to the app\")\n"
    ));
    // A block that elides the rest is never the whole file, however much it keeps.
    let elided = format!("{fixed}# ... rest of the code\n");
    assert!(!is_whole_file(APP, &elided));
    assert!(!is_whole_file(APP, &format!("{fixed}...\n")));
    // Two of three settings rewritten: too much of a small file changed.
    let settings = "TIMEOUT = 30\nMAX_RETRIES = 3\nLOG_LEVEL = \"info\"\n";
    assert!(!is_whole_file(
        settings,
        "TIMEOUT = 5\nMAX_RETRIES = 5\nLOG_LEVEL = \"info\"\n"
    ));
    assert!(is_whole_file(
        settings,
        "TIMEOUT = 30\nMAX_RETRIES = 5\nLOG_LEVEL = \"info\"\n"
    ));
    // A long file: at most a fifth of its lines may go.
    let long: String = (0..40).map(|i| format!("x{i} = {i}\n")).collect();
    let half: String = (0..30).map(|i| format!("x{i} = {i}\n")).collect();
    assert!(!is_whole_file(&long, &half));
    let most: String = (0..33).map(|i| format!("x{i} = {i}\n")).collect();
    assert!(is_whole_file(&long, &most));
    assert!(!is_whole_file("", "x = 1\n"));
}

#[test]
fn only_comments_and_lone_ellipses_count_as_elisions() {
    for line in [
        "# ...",
        "    // rest of the file",
        "# existing code unchanged",
        "...",
        "  # …",
    ] {
        assert!(elides(line), "{line}");
    }
    for line in [
        "print(\"Loading...\")",
        "x = \"...\"",
        "# Load the settings",
        "return a",
    ] {
        assert!(!elides(line), "{line}");
    }
}

const SHAPES: &str = "def area_square(side):\n    return side * side\n\n\ndef area_circle(r):\n    return 3.14 * r * r\n";

#[test]
fn a_definition_replaces_the_one_of_its_name_and_a_new_one_goes_at_the_end() {
    let merged = merge_python(SHAPES, "def area_circle(r):\n    return math.pi * r * r\n").unwrap();
    assert_eq!(
        merged,
        "def area_square(side):\n    return side * side\n\n\ndef area_circle(r):\n    return math.pi * r * r\n"
    );
    let added = merge_python(
        "def add(a, b):\n    return a + b\n",
        "def multiply(a, b):\n    return a * b\n",
    )
    .unwrap();
    assert_eq!(
        added,
        "def add(a, b):\n    return a + b\n\n\ndef multiply(a, b):\n    return a * b\n"
    );
    // Decorators and a class travel with their definition; the rest of the file stays.
    let source = "import os\n\n\n@cache\ndef f():\n    return 1\n\n\nclass A:\n    x = 1\n\n    def m(self):\n        return 2\n\n\nprint(f())\n";
    let merged = merge_python(source, "class A:\n    x = 3\n").unwrap();
    assert_eq!(
        merged,
        source.replace(
            "class A:\n    x = 1\n\n    def m(self):\n        return 2\n",
            "class A:\n    x = 3\n"
        )
    );
    let merged = merge_python(source, "@cache\ndef f():\n    return 5\n").unwrap();
    assert!(
        merged.contains("@cache\ndef f():\n    return 5\n\n\nclass A:"),
        "{merged}"
    );
    assert_eq!(merged.matches("@cache").count(), 1);
}

#[test]
fn a_block_with_anything_but_definitions_and_imports_is_not_merged() {
    // A usage line beside the definition: where it goes is a guess.
    assert_eq!(
        merge_python(
            SHAPES,
            "def area_circle(r):\n    return 1\n\nprint(area_circle(2))\n"
        ),
        None
    );
    // Only imports, or a body line: nothing to place.
    assert_eq!(merge_python(SHAPES, "import math\n"), None);
    assert_eq!(merge_python(SHAPES, "    return math.pi * r * r\n"), None);
    // The same definition again changes nothing.
    assert_eq!(
        merge_python(SHAPES, "def area_circle(r):\n    return 3.14 * r * r\n"),
        None
    );
}

#[test]
fn imports_go_after_the_last_import_or_below_the_module_header() {
    let merged = merge_python(
        SHAPES,
        "import math\n\ndef area_circle(r):\n    return math.pi * r * r\n",
    )
    .unwrap();
    assert!(
        merged.starts_with("import math\n\n\ndef area_square(side):"),
        "{merged}"
    );
    let source = "import os\nfrom sys import argv\n\nprint(argv)\n";
    assert_eq!(
        add_imports(source, &["import math", "import os", "import math"]),
        "import os\nfrom sys import argv\nimport math\n\nprint(argv)\n"
    );
    let headed = "#!/usr/bin/env python3\n\"\"\"Tools.\n\nMore.\n\"\"\"\n\nx = 1\n";
    assert_eq!(
        add_imports(headed, &["import math"]),
        "#!/usr/bin/env python3\n\"\"\"Tools.\n\nMore.\n\"\"\"\n\nimport math\n\nx = 1\n"
    );
    assert_eq!(add_imports("", &["import math"]), "import math\n");
}

#[test]
fn brackets_in_strings_and_comments_and_lines_of_a_long_string_start_nothing() {
    let source = "OPEN = \"(\"  # a ( too\nDOC = \"\"\"\ndef not_a_function():\n\"\"\"\n\n\ndef area(r):\n    return 3.14 * r * r\n";
    let merged = merge_python(source, "def area(r):\n    return math.pi * r * r\n").unwrap();
    assert_eq!(merged, source.replace("3.14", "math.pi"));
    let escaped = "S = 'it\\'s ('\n\n\ndef f():\n    return 1\n";
    let merged = merge_python(escaped, "def f():\n    return 2\n").unwrap();
    assert_eq!(merged, escaped.replace("return 1", "return 2"));
}

#[test]
fn blank_lines_alone_are_no_change() {
    assert!(!changes_something(SHAPES, &SHAPES.replace("\n\n\n", "\n")));
    assert!(!changes_something(
        SHAPES,
        &SHAPES.replace("side\n", "side  \n")
    ));
    assert!(changes_something(SHAPES, &format!("import math\n{SHAPES}")));
    assert!(changes_something(
        SHAPES,
        &SHAPES.replace("3.14", "math.pi")
    ));
    assert!(changes_something(
        SHAPES,
        &SHAPES.replace("    return side", "        return side")
    ));
    assert!(changes_something("x = 1\n", ""));
}
