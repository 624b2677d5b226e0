// Monaco for the studio's pages: the vendored AMD build loaded from our origin, and a CUDA language on C++.
(function () {
  const KS = (window.KS = window.KS || {});

  const CUDA_KEYWORDS = ["__global__", "__device__", "__host__", "__shared__", "__constant__", "__restrict__",
    "__forceinline__", "__launch_bounds__", "__syncthreads", "__syncwarp", "__shfl_xor_sync", "__shfl_down_sync",
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "float4", "float2", "int4", "half", "__half",
    "__nv_bfloat16", "cudaStream_t", "dim3"];
  const CPP_KEYWORDS = ["auto", "bool", "break", "case", "char", "const", "constexpr", "continue", "default", "do",
    "double", "else", "enum", "extern", "false", "float", "for", "if", "inline", "int", "int64_t", "int32_t", "long",
    "namespace", "nullptr", "return", "short", "signed", "sizeof", "static", "struct", "switch", "template", "true",
    "typedef", "typename", "unsigned", "using", "void", "volatile", "while", "uint32_t", "uint64_t", "size_t"];

  function registerCuda(m) {
    m.languages.register({ id: "cuda", extensions: [".cu", ".cuh"] });
    m.languages.setMonarchTokensProvider("cuda", {
      cuda: CUDA_KEYWORDS, keywords: CPP_KEYWORDS,
      tokenizer: {
        root: [
          [/#\s*\w+/, "keyword.directive"],
          [/[a-zA-Z_]\w*/, { cases: { "@cuda": "type.identifier", "@keywords": "keyword", "@default": "identifier" } }],
          [/\/\/.*$/, "comment"],
          [/\/\*/, "comment", "@comment"],
          [/"([^"\\]|\\.)*"/, "string"],
          [/\d+\.?\d*([eE][-+]?\d+)?[fFlLuU]*/, "number"],
          [/<<<|>>>/, "keyword.operator"],
        ],
        comment: [[/[^/*]+/, "comment"], [/\*\//, "comment", "@pop"], [/[/*]/, "comment"]],
      },
    });
  }

  KS.language = function (path) {
    if (/\.(cu|cuh)$/.test(path)) return "cuda";
    if (/\.(cpp|cc|c|h|hpp)$/.test(path)) return "cpp";
    return path.endsWith(".py") ? "python" : "plaintext";
  };

  // The kernel file worth opening first of FILES ({path: text}): the longest compiled source under kernels/ (the
  // starter's copy kernel may still lie beside it, and the kernel library's headers are included, not written).
  KS.mainKernel = function (files) {
    const kernels = Object.keys(files).filter((p) => p.startsWith("kernels/"));
    const compiled = kernels.filter((p) => /\.(cu|cpp|cc|c)$/.test(p));
    const longest = (paths) => paths.sort((a, b) => files[b].length - files[a].length)[0];
    return longest(compiled) || longest(kernels);
  };

  // Calls back with window.monaco once the vendored editor has loaded (the CUDA language registered once).
  let loading = null;
  KS.loadMonaco = function (vsPath) {
    if (!loading) {
      loading = new Promise((resolve) => {
        window.require.config({ paths: { vs: vsPath } });
        window.require(["vs/editor/editor.main"], function () {
          registerCuda(window.monaco);
          resolve(window.monaco);
        });
      });
    }
    return loading;
  };
})();
