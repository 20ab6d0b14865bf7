//! Fake CPython interpreters: small shared libraries built with gcc that export what
//! detection looks at (`_PyRuntime` in `.PyRuntime`, `Py_Version`, the eval loop with a
//! hot/cold split, `PyGILState_GetThisThreadState` reading the key, the type objects),
//! each part adjustable, so that tests can check every verdict and a crafted file's
//! failure modes, and the fuzz target starts from files detection accepts.

use std::path::PathBuf;
use std::process::Command;

use hotspot_python::debug_offsets::{COOKIE, FIELDS, SIZE_3_13, SIZES};

/// What the fake exports.
#[derive(Debug, Clone)]
pub struct FakePython {
    /// `Py_Version`'s value; `None` leaves the symbol out.
    pub py_version: Option<u32>,
    /// The first bytes of `_PyRuntime` (a `_Py_DebugOffsets`, for 3.13+).
    pub runtime_prefix: Vec<u8>,
    /// Where `PyGILState_GetThisThreadState` finds the `Py_tss_t` in `_PyRuntime`.
    pub tss_offset: u32,
    /// Data symbols to add (a debug build's `_Py_NegativeRefcount`, 2.7's
    /// `Py_InitModule4_64`).
    pub extra: Vec<&'static str>,
    /// Symbols to leave out, of `PyCode_Type`, `PyUnicode_Type`, `PyBytes_Type`.
    pub without: Vec<&'static str>,
    /// Strip `.symtab` (as Debian does), leaving the cold part unnamed.
    pub stripped: bool,
}

impl FakePython {
    /// A fake of the given `PY_VERSION_HEX` with the key where that version keeps it.
    pub fn new(version_hex: u32) -> Self {
        let minor = (version_hex >> 16) & 0xff;
        let tss_offset = match minor {
            8 => 1392,
            9 | 10 => 584,
            11 => 592,
            12 => 1544,
            _ => 2160,
        };
        FakePython {
            py_version: (minor >= 11).then_some(version_hex),
            runtime_prefix: if minor >= 13 {
                debug_offsets_3_13(u64::from(version_hex))
            } else {
                Vec::new()
            },
            tss_offset,
            extra: Vec::new(),
            without: Vec::new(),
            stripped: false,
        }
    }

    fn source(&self) -> String {
        let mut c = String::from(
            "#include <pthread.h>\n\
             typedef struct { int init; unsigned key; } tss_t;\n",
        );
        let prefix: Vec<String> = self.runtime_prefix.iter().map(|b| b.to_string()).collect();
        c += &format!(
            "__attribute__((section(\".PyRuntime\"), aligned(32))) unsigned char _PyRuntime[8192] = {{ {} }};\n",
            if prefix.is_empty() {
                "0".to_string()
            } else {
                prefix.join(",")
            }
        );
        if let Some(v) = self.py_version {
            c += &format!("const unsigned long Py_Version = {v:#x}UL;\n");
        }
        for ty in ["PyCode_Type", "PyUnicode_Type", "PyBytes_Type"] {
            if !self.without.contains(&ty) {
                c += &format!("char {ty}[416];\n");
            }
        }
        for name in &self.extra {
            c += &format!("char {name}[8];\n");
        }
        c += &format!(
            "__attribute__((noinline)) void *PyThread_tss_get(tss_t *t) {{ return pthread_getspecific(t->key); }}\n\
             void *PyGILState_GetThisThreadState(void) {{ return PyThread_tss_get((tss_t *)(_PyRuntime + {})); }}\n",
            self.tss_offset
        );
        // A loop with a branch the compiler puts in a cold part (`.text.unlikely`).
        c += "extern void report(int) __attribute__((cold));\n\
              int _PyEval_EvalFrameDefault(int *p, int n) {\n\
                  int s = 0;\n\
                  for (int i = 0; i < n; i++) {\n\
                      if (__builtin_expect(p[i] < 0, 0)) { report(i); s -= p[i] * 3; continue; }\n\
                      s += p[i];\n\
                  }\n\
                  return s;\n\
              }\n\
              void report(int i) { (void)i; }\n";
        c
    }

    /// Builds the fake as `name` (e.g. `libpython3.12.so`) under the test scratch
    /// directory, in its own directory per `tag`; returns its path.
    pub fn build(&self, tag: &str, name: &str) -> PathBuf {
        let dir = crate::target_tmp().join("fake-python").join(tag);
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("fake.c");
        std::fs::write(&src, self.source()).unwrap();
        let out = dir.join(name);
        let status = Command::new("gcc")
            .args(["-O2", "-fPIC", "-shared", "-o"])
            .arg(&out)
            .arg(&src)
            .status()
            .expect("gcc");
        assert!(status.success(), "gcc on {}", src.display());
        if self.stripped {
            let status = Command::new("strip")
                .arg("--strip-unneeded")
                .arg(&out)
                .status()
                .expect("strip (binutils)");
            assert!(status.success());
        }
        out
    }
}

/// A 3.13 `_Py_DebugOffsets` with 3.13.0's values (those of pyenv's build, which
/// `hotspot-python`'s DWARF test checks) and the given version.
pub fn debug_offsets_3_13(version_hex: u64) -> Vec<u8> {
    let value = |name: &str| -> u64 {
        match name {
            "thread_state.size" => 304,
            "thread_state.current_frame" => 72,
            "thread_state.thread_id" => 152,
            "interpreter_frame.size" => 80,
            "interpreter_frame.previous" => 8,
            "interpreter_frame.executable" => 0,
            "interpreter_frame.instr_ptr" => 56,
            "interpreter_frame.owner" => 70,
            "code_object.size" => 208,
            "code_object.filename" => 112,
            "code_object.name" => 120,
            "code_object.qualname" => 128,
            "code_object.linetable" => 136,
            "code_object.firstlineno" => 68,
            "code_object.argcount" => 52,
            "code_object.co_code_adaptive" => 200,
            "pyobject.size" => 16,
            "pyobject.ob_type" => 8,
            "bytes_object.size" => 40,
            "bytes_object.ob_size" => 16,
            "bytes_object.ob_sval" => 32,
            "unicode_object.size" => 64,
            "unicode_object.state" => 32,
            "unicode_object.length" => 16,
            "unicode_object.asciiobject_size" => 40,
            other => panic!("no value for {other}"),
        }
    };
    let mut b = vec![0u8; SIZE_3_13];
    b[..8].copy_from_slice(COOKIE);
    b[8..16].copy_from_slice(&version_hex.to_le_bytes());
    for (name, at) in FIELDS.iter().chain(&SIZES) {
        b[*at..at + 8].copy_from_slice(&value(name).to_le_bytes());
    }
    b
}
