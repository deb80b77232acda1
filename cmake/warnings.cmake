# Warnings for gpuplan's own targets only; third-party headers are included as system headers.
function(gpuplan_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                                           -Wno-sign-conversion)
  if(GPUPLAN_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
