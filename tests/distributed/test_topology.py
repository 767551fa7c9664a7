"""The interconnect label from `nvidia-smi topo -m` text, as the driver prints it."""

from __future__ import annotations

import pytest

from benchmarks.harness.distributed import topology
from benchmarks.harness.distributed.topology import TopologyError, parse_topology, slowest_link

TWO_NVLINK = (
    "\t\x1b[4mGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
    "GPU0\t X \tNV18\t0-31\t0\t\tN/A\n"
    "GPU1\tNV18\t X \t0-31\t0\t\tN/A\n"
    "\n"
    "Legend:\n\n"
    "  X    = Self\n"
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n"
    "  NV#  = Connection traversing a bonded set of # NVLinks\n"
)

FOUR_MIXED_WITH_NICS = """\
        GPU0    GPU1    GPU2    GPU3    NIC0    NIC1    CPU Affinity    NUMA Affinity   GPU NUMA ID
GPU0     X      NV12    SYS     SYS     PXB     SYS     0-27,56-83      0               N/A
GPU1    NV12     X      SYS     SYS     PXB     SYS     0-27,56-83      0               N/A
GPU2    SYS     SYS      X      PIX     SYS     PXB     28-55,84-111    1               N/A
GPU3    SYS     SYS     PIX      X      SYS     PXB     28-55,84-111    1               N/A
NIC0    PXB     PXB     SYS     SYS      X      SYS
NIC1    SYS     SYS     PXB     PXB     SYS      X

Legend:

  X    = Self
  PIX  = Connection traversing at most a single PCIe bridge
"""


def test_two_gpus_on_nvlink():
    links = parse_topology(TWO_NVLINK)
    assert links == {(0, 1): "NV18", (1, 0): "NV18"}
    assert slowest_link(links, [0, 1]) == "NV18"


def test_the_slowest_link_among_the_gpus_in_use_names_the_case():
    links = parse_topology(FOUR_MIXED_WITH_NICS)
    assert len(links) == 12 and links[(2, 3)] == "PIX" and links[(0, 2)] == "SYS"
    assert slowest_link(links, [0, 1]) == "NV12"
    assert slowest_link(links, [2, 3]) == "PIX"
    assert slowest_link(links, [0, 1, 2]) == "SYS"
    assert slowest_link(links, [1]) == topology.SINGLE


def test_nvlink_with_fewer_links_is_slower():
    links = {(0, 1): "NV4", (1, 0): "NV4", (0, 2): "NV18", (2, 0): "NV18", (1, 2): "NV18", (2, 1): "NV18"}
    assert slowest_link(links, [0, 1, 2]) == "NV4"


@pytest.mark.parametrize("text", ["", "No devices were found\n", "GPU0 X\nGPU1 NV18"])
def test_text_without_a_matrix_is_an_error(text):
    with pytest.raises(TopologyError):
        links = parse_topology(text)
        slowest_link(links, [0, 1])


def test_gpus_not_in_the_matrix_are_an_error():
    with pytest.raises(TopologyError, match="no link for GPU pair"):
        slowest_link(parse_topology(TWO_NVLINK), [0, 2])


def test_cuda_visible_devices_maps_ranks_to_physical_gpus():
    assert topology.visible_gpu_indices(2, {}) == [0, 1]
    assert topology.visible_gpu_indices(2, {"CUDA_VISIBLE_DEVICES": "3, 1,0"}) == [3, 1]
    with pytest.raises(TopologyError, match="UUID"):
        topology.visible_gpu_indices(2, {"CUDA_VISIBLE_DEVICES": "GPU-8c1e,GPU-77aa"})


def test_labels_without_gpus():
    assert topology.interconnect(2, "cpu") == topology.LOOPBACK
    assert topology.interconnect(1, "cuda") == topology.SINGLE
