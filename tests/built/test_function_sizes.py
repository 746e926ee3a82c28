"""Each function's layers are what it needs, and its code and layers fit Lambda's 250 MB unzipped.

Measured on the `sam build` output (`make check-build` builds it): the bytes of every file of the
function's code folder and of each layer it names, as Lambda unzips them.
"""

from __future__ import annotations

import pytest

from .conftest import MB, UNZIPPED_LIMIT, Build

EVERY_FUNCTION = ["SluiceLayer", "DepsLayer"]
# The parsing libraries for the parse function, the local model for the functions that embed; the
# API functions (and the rest) carry neither.
BY_NEED = {"ParseFunction": ["ParseLayer"], "EmbedFunction": ["ModelLayer"], "SearchFunction": ["ModelLayer"],
           # Chat (issue 16): the file routes and the presigned arrivals check and parse; the conversation
           # routes and the attachment worker count tokens and embed. No function carries both layers.
           "ChatFilesFunction": ["ParseLayer"], "ChatArrivalFunction": ["ParseLayer"],
           "ChatFunction": ["ModelLayer"], "ChatWorkerFunction": ["ModelLayer"],
           # The sync tasks: the remote stores' clients (azure_blob, gcs, git), nothing else carries them.
           "SyncTaskFunction": ["ConnectorsLayer"]}
# The LibreOffice layer an operator attaches to the parse function (LibreOfficeLayerArn) is built
# elsewhere: the parse function keeps this much free for it (docs/operations/deploying.md, "Legacy Word (.doc) on AWS").
LIBREOFFICE_ALLOWANCE = 100 * MB
# And the Tesseract layer (TesseractLayerArn, OcrProvider tesseract): language data for a few languages
# (tessdata_fast's eng.traineddata is about 4 MB) and, if the OCR path needs one, the tesseract program
# with its libraries, stripped (docs/operations/deploying.md "OCR on AWS"). With LibreOffice's it keeps 112 MB free.
TESSERACT_ALLOWANCE = 12 * MB


def test_each_function_carries_the_layers_it_needs(build: Build):
    layers = {name: fn.layers for name, fn in build.functions.items()}
    expected = {name: EVERY_FUNCTION + BY_NEED.get(name, []) for name in build.functions}
    assert layers == expected
    external = {name: fn.external_layers for name, fn in build.functions.items() if fn.external_layers}
    assert list(external) == ["ParseFunction"]  # LibreOffice's and Tesseract's layers, where the operator names them


def test_the_layers_hold_what_their_functions_need_and_nothing_heavier(build: Build):
    def has(layer: str, path: str) -> bool:
        return (build.layer_dirs[layer] / "python" / path).exists()

    assert has("ParseLayer", "pymupdf") and has("ParseLayer", "docx") and has("ParseLayer", "openpyxl")
    model = build.layer_dirs["ModelLayer"] / "python" / "sluice" / "_models" / "all-MiniLM-L6-v2"
    assert (model / "model.onnx").stat().st_size > 20 * MB and (model / "tokenizer.json").is_file()
    assert has("ModelLayer", "onnxruntime") and has("ModelLayer", "tokenizers") and has("ModelLayer", "numpy")
    assert has("ConnectorsLayer", "azure/storage/blob") and has("ConnectorsLayer", "google/cloud/storage")
    assert has("ConnectorsLayer", "dulwich") and has("ConnectorsLayer", "protego") and has("ConnectorsLayer", "lxml")
    assert has("DepsLayer", "re2")  # a web source's patterns: validated by the sources function, run by the sync one
    for heavy in ("pymupdf", "onnxruntime", "numpy"):
        assert not has("ConnectorsLayer", heavy), f"ConnectorsLayer holds {heavy}"
    for layer in ("SluiceLayer", "DepsLayer", "ModelLayer", "ParseLayer", "ConnectorsLayer"):
        # sluice-client and its frameworks are for the service's callers (clients/python), never Lambda's.
        for heavy in ("torch", "sentence_transformers", "transformers", "sluice_client", "langchain_core",
                      "llama_index", "mcp"):
            assert not has(layer, heavy), f"{layer} holds {heavy}"
    for heavy in ("pymupdf", "onnxruntime", "numpy", "boto3", "botocore"):
        assert not has("DepsLayer", heavy), f"DepsLayer holds {heavy}"
    assert not (build.layer_dirs["SluiceLayer"] / "python" / "sluice" / "_models").exists()
    assert not has("SluiceLayer", "sluice/local")


def test_every_function_fits_lambdas_unzipped_limit(build: Build, capsys: pytest.CaptureFixture[str]):
    layer_bytes = {name: build.size(path) for name, path in build.layer_dirs.items()}
    rows = []
    for name, fn in sorted(build.functions.items()):
        code = build.size(fn.code)
        layers = sum(layer_bytes[layer] for layer in fn.layers)
        allowance = LIBREOFFICE_ALLOWANCE + TESSERACT_ALLOWANCE if fn.external_layers else 0
        rows.append((name, code, layers, allowance, code + layers + allowance))
    with capsys.disabled():
        print("\nfunction              code MB  layers MB  kept free MB  total MB  (limit 250)")
        for name, code, layers, allowance, total in rows:
            print(f"{name:<20} {code / MB:8.2f} {layers / MB:10.1f} {allowance / MB:13.0f} {total / MB:9.1f}")
        print("layers: " + ", ".join(f"{n} {b / MB:.1f} MB" for n, b in sorted(layer_bytes.items())))
    over = {name: round(total / MB, 1) for name, _, _, _, total in rows if total > UNZIPPED_LIMIT}
    assert over == {}, f"over Lambda's 250 MB unzipped (MB): {over}"


def test_no_function_carries_both_the_parsers_and_the_model(build: Build):
    # Together they are over the limit (docs/operations/deploying.md "Layers per need"): a function needing
    # both is a split to make.
    both = [name for name, fn in build.functions.items() if {"ParseLayer", "ModelLayer"} <= set(fn.layers)]
    assert both == []
