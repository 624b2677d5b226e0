// Whole-forward replay (written by Kernel Studio's heuristic policy for a plan of many small kernels, whose time goes
// to launching them rather than to running them): the kernels of one call are captured once into a CUDA graph and
// replayed on the caller's stream, one launch instead of one per kernel.
//
// Every call copies its inputs into the graph's own and its result out into a tensor of its own, so each call
// computes from its own inputs and returns fresh storage. A graph belongs to one key (the device, the inputs' sizes
// and the pointers of the parameters, buffers and folded values it reads): the first call with a key runs directly
// (which also warms the kernels up: library handles, algorithm choices), the second captures. While the caller's
// stream is itself capturing (a harness capturing the forward into a graph of its own), the kernels are launched
// directly, into that capture; where capturing fails, they are always launched directly.
#include <cuda_runtime.h>
#include <mutex>
#include <vector>

namespace {

struct KsGraph {
    std::vector<int64_t> key;
    int calls = 0;  // calls seen with this key before its graph was captured
    bool failed = false;  // capture failed: launched directly from then on
    std::vector<Tensor> inputs;  // the graph's copies of the inputs
    std::vector<Tensor> buffers;  // its intermediates and its output (the last), alive as long as it is
    cudaGraphExec_t exec = nullptr;
    cudaEvent_t done = nullptr;  // recorded after a replay's last copy
    cudaStream_t stream = nullptr;  // where the last replay ran
};

}  // namespace

static const size_t KS_GRAPHS = 4;  // graphs kept at once (the batch sizes of shape trials), the oldest dropped first

static bool ks_capturing(cudaStream_t stream) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
        cudaGetLastError();
        return true;  // unknown: a direct launch is right either way
    }
    return status != cudaStreamCaptureStatusNone;
}

template <class Launch>
static cudaGraphExec_t ks_capture(Launch& launch) {
    // On a stream of its own, so that nothing else the caller's stream runs meanwhile is captured.
    cudaStream_t side = nullptr;
    if (cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) {
        cudaGetLastError();
        return nullptr;
    }
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    bool ok = cudaStreamBeginCapture(side, cudaStreamCaptureModeThreadLocal) == cudaSuccess;
    if (ok) {
        try {
            launch(side);
        } catch (...) {
            ok = false;
        }
        ok = cudaStreamEndCapture(side, &graph) == cudaSuccess && ok && graph != nullptr;
    }
    if (ok) ok = cudaGraphInstantiateWithFlags(&exec, graph, 0) == cudaSuccess;
    if (graph) cudaGraphDestroy(graph);
    cudaStreamDestroy(side);
    if (!ok) {
        cudaGetLastError();
        return nullptr;
    }
    return exec;
}

static void ks_release(KsGraph& g) {
    if (g.done) {
        cudaEventSynchronize(g.done);  // its last replay may still read its buffers
        cudaEventDestroy(g.done);
    }
    if (g.exec) cudaGraphExecDestroy(g.exec);
}

// One call: INPUTS are the call's inputs (swapped, while the graph is captured, for the graph's copies of them),
// STATICS the tensors the graph reads in place, BUFFERS what ALLOCATE allocates (the output last) for LAUNCH(stream)
// to write.
template <class Allocate, class Launch>
static Tensor ks_forward(std::vector<Tensor*> inputs, std::vector<const Tensor*> statics, std::vector<Tensor*> buffers,
                         cudaStream_t stream, Allocate allocate, Launch launch) {
    Tensor& output = *buffers.back();
    if (ks_capturing(stream)) {
        allocate();
        launch(stream);
        return output;
    }
    std::vector<int64_t> key{(int64_t)(inputs.empty() ? statics[0]->get_device() : inputs[0]->get_device())};
    for (Tensor* t : inputs) {
        key.push_back(t->dim());
        for (int64_t d = 0; d < t->dim(); ++d) key.push_back(t->size(d));
    }
    for (const Tensor* t : statics) key.push_back((int64_t)(intptr_t)t->data_ptr());
    // Never destroyed: at the process's exit the framework's allocator may be gone before this library's statics.
    static std::mutex* lock = new std::mutex();
    static std::vector<KsGraph>& graphs = *new std::vector<KsGraph>();
    std::lock_guard<std::mutex> guard(*lock);
    KsGraph* g = nullptr;
    for (KsGraph& candidate : graphs)
        if (candidate.key == key) g = &candidate;
    if (!g) {
        if (graphs.size() == KS_GRAPHS) {
            ks_release(graphs.front());
            graphs.erase(graphs.begin());
        }
        graphs.emplace_back();
        g = &graphs.back();
        g->key = key;
    }
    if (!g->exec) {
        if (g->failed || ++g->calls < 2) {
            allocate();
            launch(stream);
            return output;
        }
        std::vector<Tensor> given;
        for (Tensor* t : inputs) {
            given.push_back(*t);
            *t = torch::stable::empty_like(*t);
        }
        allocate();
        g->exec = ks_capture(launch);
        for (size_t i = 0; i < inputs.size(); ++i) {
            if (g->exec) g->inputs.push_back(*inputs[i]);
            *inputs[i] = given[i];
        }
        if (!g->exec || cudaEventCreateWithFlags(&g->done, cudaEventDisableTiming) != cudaSuccess) {
            cudaGetLastError();
            ks_release(*g);
            g->exec = nullptr;
            g->done = nullptr;
            g->inputs.clear();
            g->failed = true;
            allocate();
            launch(stream);
            return output;
        }
        for (Tensor* t : buffers) g->buffers.push_back(*t);
    }
    if (g->stream && g->stream != stream) cudaStreamWaitEvent(stream, g->done, 0);  // its buffers are free again
    for (size_t i = 0; i < inputs.size(); ++i)
        cudaMemcpyAsync(g->inputs[i].data_ptr(), inputs[i]->data_ptr(), inputs[i]->numel() * inputs[i]->element_size(),
                        cudaMemcpyDeviceToDevice, stream);
    cudaError_t launched = cudaGraphLaunch(g->exec, stream);
    if (launched != cudaSuccess)
        throw std::runtime_error(std::string("replaying the forward's CUDA graph failed: ") +
                                 cudaGetErrorString(launched));
    const Tensor& result = g->buffers.back();
    Tensor out = torch::stable::empty_like(result);
    cudaMemcpyAsync(out.data_ptr(), result.data_ptr(), out.numel() * out.element_size(), cudaMemcpyDeviceToDevice,
                    stream);
    cudaEventRecord(g->done, stream);
    g->stream = stream;
    return out;
}
