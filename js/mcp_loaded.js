document.readyState === 'complete' && location.href !== 'about:blank'
