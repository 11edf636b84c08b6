"""The architectures issues #32 and #39 added to the zoo, built from their papers' blocks.

``catalogue`` lists them (issue, group, builder, loss); ``blocks`` holds the shared building blocks,
inputs and losses; the other modules hold the models by family. Plain PyTorch only: no timm,
diffusers or PyG, random weights, no downloads. Imported by the zoo scripts with ``benchmarks/`` on
``sys.path``; nothing in the library imports it.
"""
