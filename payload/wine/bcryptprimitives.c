/*
 * A stand-in for Windows' bcryptprimitives.dll, for running the payload's Go binaries under Wine 8.0 only.
 *
 * Go 1.22 and later read random bytes through ProcessPrng, which bcryptprimitives.dll exports on Windows 10 and later.
 * Debian's Wine 8.0 has no such DLL, so every Go >= 1.22 Windows binary stops at start with
 * "fatal error: bcryptprimitives.dll not found". This DLL exports ProcessPrng on top of RtlGenRandom
 * (advapi32's SystemFunction036), which Wine implements. `cargo xtask payload smoke` builds it with
 * x86_64-w64-mingw32-gcc and copies it into its Wine prefix's windows/system32. It never reaches a Windows host.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

/* Fills `data` with `size` random bytes; always TRUE on Windows, so a failure here aborts the process. */
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T size)
{
    while (size > 0) {
        ULONG chunk = size > 0x10000000 ? 0x10000000 : (ULONG)size;
        if (!SystemFunction036(data, chunk)) {
            ExitProcess(3);
        }
        data += chunk;
        size -= chunk;
    }
    return TRUE;
}
