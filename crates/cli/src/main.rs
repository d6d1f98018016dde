//! `inlay`: inspect, disassemble, run and instrument AMD GPU code.

// The allocator the runtime library uses too (see the workspace's
// Cargo.toml).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod demangle;
mod demo;
mod disasm;
mod extract;
mod hip_compat;
mod inspect;
mod json;
mod report;
mod run;
mod tools;

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use inlay_codeobj::file::MappedFile;

use report::{Input, Problems};

#[derive(Parser)]
#[command(
    name = "inlay",
    version,
    about = "AMD GPU machine code: inspect, disassemble, run, instrument"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show what a file holds: code objects, kernels (descriptor, metadata, arguments),
    /// device functions, variables, relocations, HIP kernel handles.
    Inspect {
        /// A code object, offload bundle, compressed bundle, or host executable/library.
        file: PathBuf,
        /// Print the documented JSON document (docs/inspect-json.md) instead of text.
        #[arg(long)]
        json: bool,
        /// Only this kernel (mangled name, demangled name, or demangled name without parameters).
        #[arg(long)]
        kernel: Option<String>,
        /// Only list code objects and their kernel names, one per line.
        #[arg(long, conflicts_with = "json")]
        list: bool,
    },
    /// Disassemble: byte for byte what `llvm-objdump-19 -d` prints for a code object, and the
    /// same for every code object inside a bundle, fat binary or host library.
    Disasm {
        /// Code objects, offload bundles, compressed bundles, or host executables/libraries;
        /// listed one after another, as llvm-objdump does with several files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Only this kernel and the device functions it calls.
        #[arg(long)]
        kernel: Option<String>,
        /// Structured instructions with the registers each reads and writes
        /// (docs/disasm-json.md), one JSON document per file.
        #[arg(long)]
        json: bool,
    },
    /// Write the code objects inside a bundle, compressed bundle or host binary to files.
    Extract {
        file: PathBuf,
        /// Only code objects for this processor (`gfx90a`) or target ID (`gfx90a:xnack-`).
        #[arg(long)]
        target: Option<String>,
        /// Directory to write `NNNN-<target id>.hsaco` files to.
        #[arg(short, long, default_value = ".")]
        output: PathBuf,
    },
    /// The whole path on a built-in gfx90a vector add: inspect, disassemble, run on the
    /// virtual GPU, instrument with counting hooks and compare.
    Demo,
    /// Run a program against Inlay's HSA runtime (drop-in libhsa-runtime64.so.1) and its
    /// virtual GPU. Build the runtime first: `cargo build --release` builds it with inlay.
    Run {
        /// Attach a tool: instr-count, opcode-hist, mem-trace, kernel-args, or a tool
        /// library (./NAME.so, include/inlay/tool.h); repeatable, all tools' hooks go into
        /// one instrumented copy of each kernel.
        #[arg(long = "tool", value_name = "NAME|PATH")]
        tools: Vec<String>,
        /// A tool option KEY=VALUE for every tool, or TOOL:KEY=VALUE for one
        /// (instr-count/opcode-hist: mode=block|instruction, count=wave|thread; mem-trace:
        /// capacity=MIB, dump=1; any tool: output=PATH for text, json=PATH for JSON Lines).
        /// Unknown keys and bad values are refused before the program starts.
        #[arg(long = "tool-opt", value_name = "KEY=VALUE")]
        tool_opts: Vec<String>,
        /// End any kernel dispatch still running after SECS seconds (a decimal
        /// number, e.g. 2.5), with a report as for a fault; sets
        /// INLAY_DISPATCH_TIMEOUT=SECS for the program.
        #[arg(long, value_name = "SECS")]
        timeout: Option<String>,
        /// The program and its arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        command: Vec<std::ffi::OsString>,
    },
    /// Print the shell lines that make programs started from this shell use Inlay's runtime.
    Env,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut problems = Problems::default();
    let mut out = BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    let written = match cli.command {
        Command::Inspect {
            file,
            json,
            kernel,
            list,
        } => open(&file, &mut problems).map_or(Ok(()), |f| {
            let opts = inspect::Options {
                json,
                kernel: kernel.as_deref(),
                list,
            };
            let input = Input::file(&f, file.display().to_string());
            inspect::inspect(&input, &opts, &mut out, &mut problems)
        }),
        Command::Disasm {
            files,
            kernel,
            json,
        } => {
            let opts = disasm::Options {
                kernel: kernel.as_deref(),
            };
            // Every file is opened first (a map reads nothing); one that cannot
            // be is reported in its turn and the others are still listed.
            let maps: Vec<Result<MappedFile, String>> = files
                .iter()
                .map(|f| MappedFile::open(f).map_err(|e| e.to_string()))
                .collect();
            let inputs: Vec<Result<Input, String>> = maps
                .iter()
                .zip(&files)
                .map(|(m, f)| {
                    m.as_ref()
                        .map(|m| Input::file(m, f.display().to_string()))
                        .map_err(Clone::clone)
                })
                .collect();
            if json {
                inputs.iter().try_for_each(|input| match input {
                    Ok(input) => disasm::disasm_json(input, &opts, &mut out, &mut problems),
                    Err(e) => {
                        problems.report(e);
                        Ok(())
                    }
                })
            } else {
                disasm::list_files(&inputs, &opts, &mut out, &mut problems)
            }
        }
        Command::Extract {
            file,
            target,
            output,
        } => open(&file, &mut problems).map_or(Ok(()), |f| {
            let input = Input::file(&f, file.display().to_string());
            extract::extract(&input, target.as_deref(), &output, &mut out, &mut problems)
        }),
        Command::Demo => demo(&mut out, &mut problems),
        Command::Run {
            tools,
            tool_opts,
            timeout,
            command,
        } => {
            drop(out);
            return run::run(&command, &tools, &tool_opts, timeout.as_deref());
        }
        Command::Env => {
            drop(out);
            return run::env();
        }
    };
    match written.and_then(|()| out.flush()) {
        // A closed pipe (`| head`) ends the output quietly.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => problems.report(format!("cannot write the output: {e}")),
        Ok(()) => {}
    }
    if problems.any() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Maps an input file, or reports why it cannot be.
fn open(path: &Path, problems: &mut Problems) -> Option<MappedFile> {
    MappedFile::open(path).map_err(|e| problems.report(e)).ok()
}

/// The built-in example: a project fixture compiled into the binary.
const DEMO_NAME: &str = "fixtures/gfx90a/v5/vector_add.hsaco";
const DEMO_CODE_OBJECT: &[u8] = include_bytes!("../../../fixtures/gfx90a/v5/vector_add.hsaco");

fn demo(out: &mut dyn Write, problems: &mut Problems) -> std::io::Result<()> {
    let input = Input::bytes(DEMO_CODE_OBJECT, DEMO_NAME);
    let opts = inspect::Options {
        json: false,
        kernel: None,
        list: false,
    };
    inspect::inspect(&input, &opts, out, problems)?;
    let mut listing = Vec::new();
    disasm::disasm(
        &input,
        &disasm::Options { kernel: None },
        &mut listing,
        problems,
    );
    out.write_all(&demo::shorten_listing(&listing))?;
    match demo::run(DEMO_CODE_OBJECT) {
        Ok(text) => out.write_all(text.as_bytes()),
        Err(e) => {
            problems.report(e);
            Ok(())
        }
    }
}
