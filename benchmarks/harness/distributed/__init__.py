"""te.Linear across process ranks, tensor-parallel or sharded with FSDP2: one process per rank, NCCL on GPUs,
gloo on CPU.

launcher    spawns the ranks, hosts the rendezvous, enforces a deadline, collects one report per rank
environment the variables every rank process starts with (NVLink multicast off)
topology    the interconnect between the GPUs in use, from `nvidia-smi topo -m`
scenario    one case: recipe, parallel mode, sequence parallelism, compile mode, world size, shapes;
            which slice of the single-GPU tensors each rank holds
worker      what each rank runs: single-GPU reference, sharded layer, compiled layer, timing
te_linear   te.Linear sharded with parallel_mode/tp_group/sequence_parallel, and its reference
torch_ref   the same layer in plain PyTorch over the project's NVFP4 emulation and torch.distributed
verdict     rank reports -> checks of the case record; per-sample slowest-rank timing
fsdp_checkpoint  a Linear sharded with FSDP2 through a DCP save and load on every rank, and its checks
params      which scenarios each profile runs
"""
