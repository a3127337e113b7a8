// Leaves a console message for browser_console_messages to return.
console.log('CONSOLE-MARKER', 42);
