#include "empty_callback.h"

#include <ATen/record_function.h>

namespace trainscope::pytorch {
namespace {

std::unique_ptr<at::ObserverContext> EmptyEnter(const at::RecordFunction&) { return nullptr; }
void EmptyExit(const at::RecordFunction&, at::ObserverContext*) {}

at::CallbackHandle g_handle = at::INVALID_CALLBACK_HANDLE;

}  // namespace

void SetEmptyCallback(bool enabled) {
  if (enabled && g_handle == at::INVALID_CALLBACK_HANDLE) {
    g_handle = at::addGlobalCallback(
        at::RecordFunctionCallback(&EmptyEnter, &EmptyExit).needsInputs(false));
  } else if (!enabled && g_handle != at::INVALID_CALLBACK_HANDLE) {
    at::removeCallback(g_handle);
    g_handle = at::INVALID_CALLBACK_HANDLE;
  }
}

bool HasGlobalCallbacks() { return at::hasGlobalCallbacks(); }

}  // namespace trainscope::pytorch
